import Foundation
import GrocerContracts
import GrocerCore
import Testing

@testable import CartService

@Suite struct CartRulesTests {
  @Test(
    arguments: [
      (5, 10, 5, nil), (10, 10, 10, nil), (11, 10, 10, CartAdjustment.Change.reduced(sku: "p1", to: 10)),
      (3, 0, 0, CartAdjustment.Change.outOfStock(sku: "p1")), (0, 0, 0, nil), (1, 1, 1, nil),
    ] as [(Int, Int, Int, CartAdjustment.Change?)])
  func aRequestIsClampedToWhatTheHubHas(
    requested: Int, available: Int, kept: Int, change: CartAdjustment.Change?
  ) {
    let result = CartRules.clamp(sku: "p1", requested: requested, available: available)
    #expect(result.quantity == kept)
    #expect(result.change == change)
  }

  @Test func aStockDropBelowTheLineReducesIt() {
    let event = StockChanged(hub: "h1", sku: "p1", name: "Milk", available: 2, price: Money(minorUnits: 129))
    let result = CartRules.restock(quantity: 5, oldPrice: Money(minorUnits: 129), event: event)
    #expect(result.quantity == 2)
    #expect(result.changes == [.reduced(sku: "p1", to: 2)])
  }

  @Test func aNewPriceOnAKeptLineIsReportedWithBothPrices() {
    let event = StockChanged(hub: "h1", sku: "p1", name: "Milk", available: 9, price: Money(minorUnits: 149))
    let result = CartRules.restock(quantity: 5, oldPrice: Money(minorUnits: 129), event: event)
    #expect(result.quantity == 5)
    #expect(
      result.changes == [.priceChanged(sku: "p1", from: Money(minorUnits: 129), to: Money(minorUnits: 149))])
  }

  @Test func aLineThatRanOutReportsOnlyOutOfStockEvenIfThePriceMoved() {
    let event = StockChanged(hub: "h1", sku: "p1", name: "Milk", available: 0, price: Money(minorUnits: 149))
    let result = CartRules.restock(quantity: 5, oldPrice: Money(minorUnits: 129), event: event)
    #expect(result.quantity == 0)
    #expect(result.changes == [.outOfStock(sku: "p1")])
  }
}

@Suite struct DemoPromotionTests {
  @Test func theDemoCodesAreThereAndValid() throws {
    let codes = Dictionary(uniqueKeysWithValues: Promotion.demo.map { ($0.code, $0) })
    #expect(codes["SPRING"]?.percent == 10)
    #expect(codes["WELCOME5"]?.amount == Money(minorUnits: 500))
    #expect(codes["WELCOME5"]?.minimumSubtotal == Money(minorUnits: 2000))
    #expect(codes["H1ONLY"]?.hubs == ["h1"])
    for promo in Promotion.demo {
      #expect(Promotion.normalize(promo.code) == promo.code)
      let body = PromotionUpsert(
        kind: promo.kind.rawValue, percent: promo.percent, amount: promo.amount,
        minimumSubtotal: promo.minimumSubtotal, hubs: promo.hubs, validUntil: promo.validUntil,
        description: promo.description)
      #expect(try body.validate(code: promo.code) == promo)
    }
  }
}

@Suite struct QuantityBodyTests {
  @Test(arguments: [
    (#"{"quantity":3}"#, 3), (#" { "quantity" : 0 } "#, 0), (#"{"quantity":-1}"#, -1),
    (#"{"quantity":99}"#, 99),
    ("{\n\"quantity\":\t12\r\n}", 12), (#"{"quantity":123456789}"#, 123_456_789),
  ])
  func theCommonBodyIsReadWithoutAParser(body: String, quantity: Int) throws {
    #expect(CartController.QuantityBody.fast(Array(body.utf8))?.quantity == quantity)
    #expect(try CartController.QuantityBody.decodeCartBody(from: Data(body.utf8)).quantity == quantity)
  }

  @Test(arguments: [
    #"{"quantity":2.5}"#, #"{"quantity":"3"}"#, #"{"quantity":1,"x":2}"#, #"{"quantity":007}"#,
    #"{"quantity":}"#,
    #"{"quantity":1234567890}"#, #"{"Quantity":1}"#, #"{"quantity":1}x"#, #"{"quantity":1e2}"#, "", "[1]",
    #"{"quantity":null}"#, #"{"quantity":-}"#,
  ])
  func everythingElseIsLeftToStrictJSON(body: String) {
    #expect(CartController.QuantityBody.fast(Array(body.utf8)) == nil)
  }
}

@Suite struct CartLifecycleRulesTests {
  @Test func aShortfallClampsOnlyLinesHoldingMoreThanIsLeft() throws {
    #expect(CartRules.shortfall(held: 2, count: .init(sku: "p1", available: 2)) == nil)
    #expect(CartRules.shortfall(held: 0, count: .init(sku: "p1", available: 0)) == nil)
    let reduced = try #require(CartRules.shortfall(held: 3, count: .init(sku: "p1", available: 1)))
    #expect(reduced.quantity == 1)
    #expect(reduced.change == .reduced(sku: "p1", to: 1))
    let gone = try #require(CartRules.shortfall(held: 3, count: .init(sku: "p1", available: -2)))
    #expect(gone.quantity == 0)
    #expect(gone.change == .outOfStock(sku: "p1"))
  }

  @Test func aConfirmedOrderEmptiesOnlyACartWithSomethingInIt() {
    #expect(CartRules.orderEmpties(hasLines: true, promo: nil))
    #expect(CartRules.orderEmpties(hasLines: false, promo: "SPRING"))
    #expect(!CartRules.orderEmpties(hasLines: false, promo: nil))
  }

  @Test func onlyAMatchingNonEmptyVersionIsHeldForCheckout() {
    #expect(CartRules.checkout(asked: 3, current: 3) == (true, true))
    #expect(CartRules.checkout(asked: 2, current: 3) == (false, false))
    #expect(CartRules.checkout(asked: nil, current: 3) == (false, false))
    #expect(CartRules.checkout(asked: 0, current: 0) == (true, false))
  }
}

@Suite struct MissingHubTests {
  @Test func anUnknownHubIsOnlyNotFoundOnceTheCopyWasFilled() {
    #expect(CartError.missingHub("h9", catalogueSynced: true) == .unknownHub("h9"))
    #expect(CartError.missingHub("h9", catalogueSynced: false) == .catalogueLoading)
  }
}
