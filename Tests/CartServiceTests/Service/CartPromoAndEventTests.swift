import Foundation
import GrocerContracts
import GrocerCore
import GrocerHTTP
import Testing

@testable import CartService

/// Promo codes through the API, and what events do to carts (applied to the store directly;
/// the broker path is in `CartEventFlowTests`).
@Suite struct CartPromoAndEventTests {
  func definePromo(_ fixture: CartFixture, _ code: String, _ body: String, staff: [String]? = nil) async
    -> HTTPResponse
  {
    var headers = fixture.staff(staff ?? ["*"])
    headers["Content-Type"] = "application/json"
    return await fixture.client.send("PUT", "/v1/promos/\(code)", headers: headers, body: body)
  }

  func setPromo(_ fixture: CartFixture, _ code: String?, user: String = "u1") async throws -> HTTPResponse {
    var headers = fixture.customer(user)
    headers["Content-Type"] = "application/json"
    let body = try code.map { String(decoding: try JSON.encode($0), as: UTF8.self) } ?? "null"
    return await fixture.client.send(
      "PUT", "/v1/hubs/h1/cart/promo", headers: headers, body: "{\"code\":\(body)}")
  }

  @Test func aPercentCodeIsMatchedCaseInsensitivelyAndTakesOffTheItemsOnly() async throws {
    let fixture = try CartFixture()
    let created = await definePromo(fixture, "spring", #"{"kind":"percentOff","percent":10}"#)
    #expect(created.status == 201, "\(created.bodyString)")
    #expect(try created.json(as: Promotion.self).code == "SPRING")
    try await fixture.put("p4", 1)
    let response = try await setPromo(fixture, "  Spring ")
    #expect(response.status == 200, "\(response.bodyString)")
    let cart = try response.json(as: CartView.self)
    #expect(cart.version == 2)
    #expect(cart.promo?.code == "SPRING")
    #expect(cart.promo?.applied == true)
    #expect(cart.totals.discount.minorUnits == 120)
    #expect(cart.totals.total.minorUnits == 1200 - 120 + 299 + 100)
    #expect(try await setPromo(fixture, "SPRING").json(as: CartView.self).version == 2)
    let removed = try await setPromo(fixture, nil).json(as: CartView.self)
    #expect(removed.version == 3)
    #expect(removed.promo == nil)
  }

  @Test func aCodeBelowItsMinimumStaysWithANotice() async throws {
    let fixture = try CartFixture()
    _ = await definePromo(
      fixture, "BIG",
      #"{"kind":"amountOff","amount":{"minorUnits":500,"currency":"EUR"},"minimumSubtotal":{"minorUnits":2000,"currency":"EUR"}}"#
    )
    try await fixture.put("p4", 1)
    let cart = try await setPromo(fixture, "big").json(as: CartView.self)
    #expect(cart.promo?.applied == false)
    #expect(cart.promo?.notice == "Add 8.00 EUR more to use this code.")
    #expect(cart.totals.discount.minorUnits == 0)
    let more = try await fixture.put("p4", 2)
    #expect(more.promo?.applied == true)
    #expect(more.totals.discount.minorUnits == 500)
  }

  @Test func unknownExpiredAndForeignCodesAreRefused() async throws {
    let fixture = try CartFixture()
    #expect(try await setPromo(fixture, "NOPE").json(as: ProblemBody.self).code == "unknownPromotion")
    #expect(try await setPromo(fixture, "no pe!").status == 422)
    _ = await definePromo(
      fixture, "OLD",
      #"{"kind":"percentOff","percent":5,"validUntil":"\#(Timestamp.string(from: fixture.clock.now() - 60))"}"#
    )
    #expect(try await setPromo(fixture, "OLD").json(as: ProblemBody.self).code == "promotionExpired")
    _ = await definePromo(fixture, "H2ONLY", #"{"kind":"percentOff","percent":5,"hubs":["h2"]}"#)
    #expect(try await setPromo(fixture, "H2ONLY").json(as: ProblemBody.self).code == "promotionNotValidAtHub")
    #expect(try fixture.cartEvents().isEmpty)
  }

  @Test func onlyStaffOfTheHubsDefineCodes() async throws {
    let fixture = try CartFixture()
    var headers = fixture.customer()
    headers["Content-Type"] = "application/json"
    let customer = await fixture.client.send(
      "PUT", "/v1/promos/X1", headers: headers, body: #"{"kind":"percentOff","percent":5}"#)
    #expect(customer.status == 403)
    let everywhere = await definePromo(fixture, "X1", #"{"kind":"percentOff","percent":5}"#, staff: ["h1"])
    #expect(everywhere.status == 403)
    let own = await definePromo(
      fixture, "X1", #"{"kind":"percentOff","percent":5,"hubs":["h1"]}"#, staff: ["h1"])
    #expect(own.status == 201)
    let invalid = await definePromo(fixture, "X2", #"{"kind":"percentOff","percent":0}"#)
    #expect(invalid.status == 422)
    #expect(try invalid.json(as: ProblemBody.self).code == "invalidPromotion")
  }

  @Test func aDeletedCodeLeavesEveryCartWithPromoRemoved() async throws {
    let fixture = try CartFixture()
    _ = await definePromo(fixture, "GONE", #"{"kind":"percentOff","percent":5}"#)
    try await fixture.put("p4", 1)
    _ = try await setPromo(fixture, "GONE")
    let deleted = await fixture.client.delete("/v1/promos/GONE", headers: fixture.staff())
    #expect(deleted.status == 204)
    let cart = try await fixture.cart()
    #expect(cart.version == 3)
    #expect(cart.promo == nil)
    #expect(cart.adjustments.last == CartAdjustment(.promoRemoved(code: "GONE"), version: 3))
    #expect(await fixture.client.delete("/v1/promos/GONE", headers: fixture.staff()).status == 404)
  }

  @Test func anExpiredCodeIsSweptFromCarts() async throws {
    let fixture = try CartFixture()
    _ = await definePromo(
      fixture, "SOON",
      #"{"kind":"percentOff","percent":5,"validUntil":"\#(Timestamp.string(from: fixture.clock.now() + 60))"}"#
    )
    try await fixture.put("p4", 1)
    _ = try await setPromo(fixture, "SOON")
    #expect(try fixture.app.commands.removeExpiredPromotions() == 0)
    fixture.clock.advance(by: 61)
    #expect(try fixture.app.commands.removeExpiredPromotions() == 1)
    let cart = try await fixture.cart()
    #expect(cart.promo == nil)
    #expect(cart.adjustments.last?.change == .promoRemoved(code: "SOON"))
  }

  // MARK: Events

  @Test func aStockDropAdjustsEveryCartHoldingMoreAtOnce() async throws {
    let fixture = try CartFixture()
    try await fixture.put("p1", 5, user: "a")
    try await fixture.put("p1", 2, user: "b")
    try await fixture.put("p1", 5, user: "c")
    try await fixture.put("p1", 5, user: "c")
    let event = StockChanged(
      hub: "h1", sku: "p1", name: "Oat milk", available: 3, price: CartFixture.eur(129),
      deposit: CartFixture.eur(25))
    let changed = try fixture.app.commands.applyStockChanged(
      event, version: 2, correlationID: nil)
    #expect(changed == 2)
    let a = try await fixture.cart(user: "a")
    #expect(a.version == 2)
    #expect(a.lines.first?.quantity == 3)
    #expect(a.adjustments.last == CartAdjustment(.reduced(sku: "p1", to: 3), version: 2))
    #expect(try await fixture.cart(user: "b").version == 1)
    #expect(try fixture.cartEvents(user: "a").last?.reason == "stock")

    // The same message again, or an older version, changes nothing.
    #expect(
      try fixture.app.commands.applyStockChanged(
        event, version: 2, correlationID: nil)
        == 0)
    var older = event
    older.available = 0
    #expect(
      try fixture.app.commands.applyStockChanged(
        older, version: 1, correlationID: nil)
        == 0)
    #expect(try await fixture.cart(user: "a").version == 2)
  }

  @Test func aNewPriceIsAnAdjustmentWithBothPrices() async throws {
    let fixture = try CartFixture()
    try await fixture.put("p1", 2)
    let event = StockChanged(
      hub: "h1", sku: "p1", name: "Oat milk", available: 10, price: CartFixture.eur(149))
    try fixture.app.commands.applyStockChanged(
      event, version: 2, correlationID: nil)
    let cart = try await fixture.cart(seen: 1)
    #expect(cart.version == 2)
    #expect(cart.lines.first?.unitPrice.minorUnits == 149)
    #expect(
      cart.adjustments == [
        CartAdjustment(
          .priceChanged(sku: "p1", from: CartFixture.eur(129), to: CartFixture.eur(149)), version: 2)
      ])
  }

  @Test func aReservationSparesTheCartInCheckoutButAdjustsTheOthers() async throws {
    let fixture = try CartFixture()
    try await fixture.put("p1", 4, user: "buyer")
    try await fixture.put("p1", 8, user: "other")
    let question = try fixture.app.commands.checkout(user: "buyer", hub: "h1", version: 1)
    #expect(question.matches)
    var event = StockChanged(
      hub: "h1", sku: "p1", name: "Oat milk", available: 6, price: CartFixture.eur(129),
      deposit: CartFixture.eur(25))
    event.reason = "reservation"
    try fixture.app.commands.applyStockChanged(
      event, version: 2, correlationID: nil)
    #expect(try await fixture.cart(user: "buyer").version == 1)
    #expect(try await fixture.cart(user: "other").lines.first?.quantity == 6)
    #expect(try fixture.app.commands.checkout(user: "buyer", hub: "h1", version: 0).matches == false)
  }

  /// A reservation's event that also carries a new price (the price event before it was
  /// retried and arrives after, so it is dropped as older) must still reach the cart in
  /// checkout: otherwise the tables price it anew while the remembered reply, at the same
  /// version, shows the old price.
  @Test func aReservationThatAlsoChangesThePriceAdjustsTheCartInCheckout() async throws {
    let fixture = try CartFixture()
    try await fixture.put("p1", 4, user: "buyer")
    #expect(try await fixture.cart(user: "buyer").version == 1)
    #expect(try fixture.app.commands.checkout(user: "buyer", hub: "h1", version: 1).matches)
    var event = StockChanged(
      hub: "h1", sku: "p1", name: "Oat milk", available: 6, price: CartFixture.eur(149),
      deposit: CartFixture.eur(25))
    event.reason = "reservation"
    try fixture.app.commands.applyStockChanged(
      event, version: 3, correlationID: nil)
    let reply = try await fixture.cart(user: "buyer")
    #expect(reply == (try fixture.app.commands.renderedFromTables(user: "buyer", hub: "h1")))
    #expect(reply.version == 2)
    #expect(reply.lines.first?.unitPrice == CartFixture.eur(149))
  }

  @Test func aConfirmedOrderEmptiesThatCartOnce() async throws {
    let fixture = try CartFixture()
    try await fixture.put("p1", 2)
    try await fixture.put("p1", 2, hub: "h2")
    let emptied = try fixture.app.commands.applyOrderConfirmed(
      user: "u1", hub: "h1", messageID: "o1", consumer: "cart", correlationID: nil)
    #expect(emptied)
    let cart = try await fixture.cart()
    #expect(cart.version == 2)
    #expect(cart.lines.isEmpty)
    #expect(cart.adjustments.isEmpty)
    #expect(try await fixture.cart(hub: "h2").lines.count == 1)
    #expect(
      try fixture.app.commands.applyOrderConfirmed(
        user: "u1", hub: "h1", messageID: "o1", consumer: "cart", correlationID: nil) == false)
    #expect(try await fixture.cart().version == 2)
  }

  @Test func aHubPricingChangeGivesItsCartsANewVersion() async throws {
    let fixture = try CartFixture()
    try await fixture.put("p4", 1)
    var hub = CartFixture.hubs[0].value
    hub.pricing.deliveryFee = CartFixture.eur(399)
    try fixture.app.commands.applyHubChanged(
      hub, version: 2, correlationID: nil)
    let cart = try await fixture.cart()
    #expect(cart.version == 2)
    #expect(cart.totals.deliveryFee.minorUnits == 399)
  }

  @Test func aShortfallClampsTheCartToTheReportedCounts() async throws {
    let fixture = try CartFixture()
    try await fixture.put("p1", 5)
    try await fixture.put("p4", 2)
    let cart = try fixture.app.commands.applyCounts(
      user: "u1", hub: "h1", counts: [.init(sku: "p1", available: 1), .init(sku: "p4", available: 0)],
      correlationID: nil)
    #expect(cart.version == 3)
    #expect(cart.lines.map(\.quantity) == [1])
    #expect(
      cart.adjustments == [
        CartAdjustment(.reduced(sku: "p1", to: 1), version: 3),
        CartAdjustment(.outOfStock(sku: "p4"), version: 3),
      ])
  }
}
