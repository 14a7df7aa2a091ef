import Foundation
import GrocerContracts
import GrocerCore
import Testing

@testable import CartService

/// Replies built from remembered ones (reads from memory, writes that extend the last reply)
/// must equal what the tables say, whatever happened in between.
@Suite struct CartFromMemoryEquivalenceTests {
  struct Generator {
    var state: UInt64
    mutating func next(_ bound: Int) -> Int {
      state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
      return Int((state >> 33) % UInt64(bound))
    }
  }

  @Test(arguments: [1, 2, 3] as [UInt64])
  func everyReplyEqualsTheTables(seed: UInt64) async throws {
    let fixture = try CartFixture()
    let commands = fixture.app.commands
    _ = try commands.upsertPromotion(
      Promotion(code: "TEN", kind: .percentOff, percent: 10, minimumSubtotal: CartFixture.eur(500)),
      correlationID: nil)
    var random = Generator(state: seed)
    var versions: [String: Int64] = [:]
    var productVersion: Int64 = 10
    let users = ["a", "b", "c"]
    let skus = ["p1", "p2", "p4", "p5"]
    for step in 0..<400 {
      let user = users[random.next(users.count)]
      switch random.next(10) {
      case 0...4:
        let cart = try commands.setQuantity(
          user: user, hub: "h1", sku: skus[random.next(skus.count)], quantity: random.next(12),
          seenVersion: nil,
          correlationID: nil)
        #expect(cart == (try commands.renderedFromTables(user: user, hub: "h1")), "step \(step)")
        #expect(cart.version >= versions[user, default: 0])
        versions[user] = cart.version
      case 5:
        let cart = try commands.cart(user: user, hub: "h1", seenVersion: nil)
        #expect(cart == (try commands.renderedFromTables(user: user, hub: "h1")), "step \(step)")
      case 6:
        _ = try commands.setPromo(
          user: user, hub: "h1", code: random.next(2) == 0 ? "TEN" : nil, seenVersion: nil, correlationID: nil
        )
      case 7:
        productVersion += 1
        let sku = skus[random.next(skus.count)]
        try commands.applyStockChanged(
          StockChanged(
            hub: "h1", sku: sku, name: "Product \(sku) v\(productVersion % 3)", available: random.next(15),
            price: CartFixture.eur(100 + random.next(3) * 10)),
          version: productVersion, correlationID: nil)
      case 8:
        var hub = CartFixture.hubs[0].value
        hub.pricing.minimumOrder = CartFixture.eur(500 + random.next(5) * 100)
        try commands.applyHubChanged(
          hub, version: Int64(100 + step), correlationID: nil)
      default:
        try commands.applyOrderConfirmed(
          user: user, hub: "h1", messageID: "o\(step)", consumer: "test", correlationID: nil)
      }
    }
    for user in users {
      #expect(
        try commands.cart(user: user, hub: "h1", seenVersion: nil)
          == commands.renderedFromTables(user: user, hub: "h1"))
    }
  }
}
