import Foundation
import GrocerCore
import Testing

@testable import StockService

@Suite struct DemoAssortmentTests {
  static let demo = DemoAssortment.generate()

  @Test func theSameSeedGivesTheSameAssortmentAndAnotherSeedAnother() {
    let again = DemoAssortment.generate()
    #expect(again.products == Self.demo.products)
    #expect(again.counts == Self.demo.counts)
    #expect(again.hubs == Self.demo.hubs)
    let other = DemoAssortment.generate(seed: 7)
    #expect(other.products != Self.demo.products)
  }

  /// A smaller demo (`GROCER_DEMO_PRODUCTS`) is the full one's first products, counts and all,
  /// so the SKUs the system tests name are the same products either way.
  @Test func aSmallerDemoIsTheStartOfTheFullOne() {
    let small = DemoAssortment.generate(productsPerHub: 1000)
    #expect(small.products == Array(Self.demo.products.prefix(1000)))
    let skus = Set(small.products.map(\.sku))
    for hub in Self.demo.hubs {
      #expect(small.counts[hub.id] == Self.demo.counts[hub.id]?.filter { skus.contains($0.key) })
    }
  }

  @Test func threeHubsCarryTheSameThreeThousandUniqueValidProducts() throws {
    #expect(Self.demo.hubs.map(\.id) == ["h1", "h2", "h3"])
    #expect(Self.demo.products.count == 3000)
    #expect(Set(Self.demo.products.map(\.sku)).count == 3000)
    #expect(Set(Self.demo.products.map(\.name)).count == 3000)
    #expect(Self.demo.products.first?.sku == "p00001")
    #expect(Self.demo.products.last?.sku == "p03000")
    for hub in Self.demo.hubs {
      try hub.validate()
      #expect(Set(Self.demo.counts[hub.id]?.keys ?? [:].keys) == Set(Self.demo.products.map(\.sku)))
    }
    for product in Self.demo.products { try product.validate(currency: "EUR") }
    #expect(Self.demo.counts["h1"] != Self.demo.counts["h2"])
  }

  @Test(arguments: ["h1", "h2", "h3"])
  func countsAreMostlyStockedWithSomeLowAndSomeZero(hub: String) throws {
    let counts = try #require(Self.demo.counts[hub]).values
    let total = Double(counts.count)
    let zero = Double(counts.filter { $0 == 0 }.count) / total
    let low = Double(counts.filter { (1...3).contains($0) }.count) / total
    let stocked = Double(counts.filter { (5...80).contains($0) }.count) / total
    #expect((0.03...0.07).contains(zero))
    #expect((0.07...0.13).contains(low))
    #expect(stocked > 0.8)
    #expect(counts.allSatisfy { (0...80).contains($0) })
  }

  @Test func namesPricesAndDepositsLookLikeAShop() throws {
    let products = Self.demo.products
    #expect(
      products.allSatisfy { (19...20_000).contains($0.price.minorUnits) && $0.price.minorUnits % 10 == 9 })
    let deposits = Set(products.compactMap { $0.deposit?.minorUnits })
    #expect(deposits == [8, 15, 25, 16, 30, 50])  // multipacks of two carry two deposits
    for product in products where product.name.contains("0,5 l") || product.name.contains("1,5 l") {
      if product.name.contains("Mineralwasser") || product.name.contains("Eistee") {
        #expect(product.deposit?.minorUnits == (product.name.contains("2 × ") ? 50 : 25))
      }
    }
    #expect(products.contains { $0.name.hasPrefix("Club-Mate") && $0.name.hasSuffix("0,5 l") })
    #expect(products.contains { $0.name == "Bananen 1 kg" })
    #expect(products.contains { $0.name.hasPrefix("Bio Vollmilch 3,8%") })
    #expect(products.allSatisfy { $0.unitPrice != nil })
    print("Demo sample: \(products.prefix(5).map { "\($0.sku) \($0.name) \($0.price.minorUnits)" })")
  }

  @Test func hubHoursAreAsDocumented() {
    let now = date("2026-10-20T02:00:00Z")  // Tuesday 04:00 in Berlin
    let status = Dictionary(uniqueKeysWithValues: Self.demo.hubs.map { ($0.id, $0.hours.status(at: now)) })
    #expect(status["h1"]?.isOpen == false)
    #expect(status["h1"]?.opensAt == date("2026-10-20T05:00:00Z"))
    #expect(status["h3"]?.isOpen == true)
    let saturdayNight = date("2026-10-24T22:30:00Z")  // Sunday 00:30 in Berlin
    #expect(Self.demo.hubs[1].hours.status(at: saturdayNight).isOpen)
    #expect(!Self.demo.hubs[0].hours.status(at: saturdayNight).isOpen)
  }
}
