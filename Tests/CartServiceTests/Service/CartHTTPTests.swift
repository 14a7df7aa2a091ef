import Foundation
import GrocerContracts
import GrocerCore
import GrocerHTTP
import GrocerRuntime
import GrocerTestSupport
import Testing

@testable import CartService

/// The cart API in-process: shapes, versions, clamps, promo codes and every refusal.
@Suite struct CartHTTPTests {
  @Test func anEmptyCartIsVersionZeroAndBlockedBelowTheMinimum() async throws {
    let fixture = try CartFixture()
    let cart = try await fixture.cart()
    #expect(cart.hub == "h1")
    #expect(cart.version == 0)
    #expect(cart.lines.isEmpty)
    #expect(cart.totals == .zero("EUR"))
    #expect(cart.blocker == .belowMinimum(missing: CartFixture.eur(1000)))
  }

  @Test func aQuantityIsPricedByTheServerAndARepeatChangesNothing() async throws {
    let fixture = try CartFixture()
    let first = try await fixture.put("p1", 3)
    #expect(first.version == 1)
    #expect(
      first.lines == [
        CartLineView(
          sku: "p1", name: "Oat milk", quantity: 3, unitPrice: CartFixture.eur(129),
          deposit: CartFixture.eur(25),
          lineTotal: CartFixture.eur(387))
      ])
    // 3.87 items + 0.75 deposit + 2.99 delivery + 1.00 small basket.
    #expect(first.totals.subtotal.minorUnits == 387)
    #expect(first.totals.deposit.minorUnits == 75)
    #expect(first.totals.deliveryFee.minorUnits == 299)
    #expect(first.totals.smallBasketFee.minorUnits == 100)
    #expect(first.totals.total.minorUnits == 387 + 75 + 299 + 100)
    #expect(first.blocker == .belowMinimum(missing: CartFixture.eur(613)))

    let again = try await fixture.put("p1", 3)
    #expect(again == first)
    #expect(try fixture.cartEvents().map(\.version) == [1])

    let removed = try await fixture.put("p1", 0)
    #expect(removed.version == 2)
    #expect(removed.lines.isEmpty)
  }

  @Test func cartChangedIsPublishedOnlyWhenTurnedOn() async throws {
    #expect(CartServiceConfiguration(settings: Settings([:])).publishesCartChanges == false)
    #expect(
      CartServiceConfiguration(settings: Settings(["GROCER_CART_CHANGED_EVENTS": "1"])).publishesCartChanges)

    let quiet = try CartFixture(publishesChanges: false)
    #expect(try await quiet.put("p1", 3).version == 1)
    #expect(try await quiet.put("p1", 0).version == 2)
    #expect(try quiet.outbox().isEmpty)

    let announcing = try CartFixture(publishesChanges: true)
    _ = try await announcing.put("p1", 3)
    #expect(try announcing.cartEvents().map(\.reason) == ["customer"])
  }

  @Test func moreThanTheHubHasIsClampedInANormalReplyOnce() async throws {
    let fixture = try CartFixture()
    let clamped = try await fixture.put("p2", 5)
    #expect(clamped.version == 1)
    #expect(clamped.lines.map(\.quantity) == [3])
    #expect(clamped.adjustments == [CartAdjustment(.reduced(sku: "p2", to: 3), version: 1)])
    let repeated = try await fixture.put("p2", 5)
    #expect(repeated.version == 1)

    let none = try await fixture.put("p3", 2)
    #expect(none.version == 2)
    #expect(none.lines.map(\.sku) == ["p2"])
    #expect(none.adjustments.last == CartAdjustment(.outOfStock(sku: "p3"), version: 2))
    #expect(try await fixture.put("p3", 2).version == 2)
  }

  @Test func seenVersionListsOnlyNewerAdjustments() async throws {
    let fixture = try CartFixture()
    try await fixture.put("p2", 5)
    try await fixture.put("p3", 1)
    #expect(try await fixture.cart().adjustments.count == 2)
    #expect(try await fixture.cart(seen: 1).adjustments.map(\.version) == [2])
    #expect(try await fixture.cart(seen: 2).adjustments.isEmpty)
  }

  @Test func linesKeepTheOrderTheyWereAddedIn() async throws {
    let fixture = try CartFixture()
    try await fixture.put("p4", 1)
    try await fixture.put("p1", 1)
    try await fixture.put("p4", 2)
    #expect(try await fixture.cart().lines.map(\.sku) == ["p4", "p1"])
  }

  @Test func eachUserHasTheirOwnCartPerHub() async throws {
    let fixture = try CartFixture()
    try await fixture.put("p1", 2, user: "alice")
    #expect(try await fixture.cart(user: "bob").lines.isEmpty)
    #expect(try await fixture.cart(hub: "h2", user: "alice").lines.isEmpty)
    #expect(try await fixture.cart(user: "alice").lines.count == 1)
  }

  @Test func aClosedHubBlocksCheckoutWithWhenItOpens() async throws {
    let fixture = try CartFixture()
    let cart = try await fixture.put("p1", 9, hub: "h2")
    #expect(cart.blocker == .hubClosed(opensAt: nil))
  }

  @Test func freeDeliveryAndNoBlockerAtTheThresholds() async throws {
    let fixture = try CartFixture()
    let cart = try await fixture.put("p4", 3)
    #expect(cart.totals.subtotal.minorUnits == 3600)
    #expect(cart.totals.deliveryFee.minorUnits == 0)
    #expect(cart.totals.smallBasketFee.minorUnits == 0)
    #expect(cart.blocker == nil)
  }

  // MARK: Refusals

  @Test(arguments: [
    ("{\"quantity\":-1}", 422, "quantityOutOfRange"), ("{\"quantity\":100}", 422, "quantityOutOfRange"),
    ("{\"quantity\":2.5}", 400, "wrongType"), ("{\"quantity\":\"3\"}", 400, "wrongType"),
    ("{\"quantity\":null}", 400, "wrongType"), ("{}", 400, "missingField"),
    ("{\"quantity\":", 400, "malformedJSON"),
    ("[1]", 400, "wrongType"), ("{\"quantity\":1,\"qty\":1}", 400, "unknownField"),
  ])
  func badQuantitiesAreRefused(body: String, status: Int, code: String) async throws {
    let fixture = try CartFixture()
    var headers = fixture.customer()
    headers["Content-Type"] = "application/json"
    let response = await fixture.client.send("PUT", "/v1/hubs/h1/cart/items/p1", headers: headers, body: body)
    #expect(response.status == status, "\(response.bodyString)")
    #expect(try response.json(as: ProblemBody.self).code == code)
    #expect(try fixture.cartEvents().isEmpty)
  }

  @Test func unknownHubsAndProductsAreNamed() async throws {
    let fixture = try CartFixture()
    let hub = await fixture.client.get("/v1/hubs/h9/cart", headers: fixture.customer())
    #expect(hub.status == 404)
    #expect(try hub.json(as: ProblemBody.self).code == "unknownHub")
    let invalidHub = await fixture.client.get("/v1/hubs/h%20x/cart", headers: fixture.customer())
    #expect(invalidHub.status == 404)
    let product = try await fixture.client.put(
      "/v1/hubs/h1/cart/items/p999", json: ["quantity": 1], headers: fixture.customer())
    #expect(product.status == 422)
    #expect(try product.json(as: ProblemBody.self).code == "unknownProduct")
    // A product of another hub is unknown here.
    let elsewhere = try await fixture.client.put(
      "/v1/hubs/h2/cart/items/p4", json: ["quantity": 1], headers: fixture.customer())
    #expect(try elsewhere.json(as: ProblemBody.self).code == "unknownProduct")
  }

  @Test func aCartNeedsAToken() async throws {
    let fixture = try CartFixture()
    let response = await fixture.client.get("/v1/hubs/h1/cart")
    #expect(response.status == 401)
    #expect(response.headers["WWW-Authenticate"]?.hasPrefix("Bearer") == true)
    let forged = await fixture.client.get(
      "/v1/hubs/h1/cart",
      headers: ["Authorization": "Bearer " + CartFixture.token("u1", clock: fixture.clock, ttl: -3600)])
    #expect(forged.status == 401)
  }

  @Test func aBodyThatIsNotJSONIs415AndABadSeenVersion400() async throws {
    let fixture = try CartFixture()
    var headers = fixture.customer()
    headers["Content-Type"] = "text/plain"
    let response = await fixture.client.send("PUT", "/v1/hubs/h1/cart/items/p1", headers: headers, body: "3")
    #expect(response.status == 415)
    let seen = await fixture.client.get("/v1/hubs/h1/cart?seenVersion=-1", headers: fixture.customer())
    #expect(seen.status == 400)
    #expect(try seen.json(as: ProblemBody.self).code == "invalidSeenVersion")
  }

  @Test func anEmptyCopyAnswers503UntilTheCatalogueIsFilled() async throws {
    let fixture = try CartFixture(seed: false)
    let loading = await fixture.client.get("/v1/hubs/h1/cart", headers: fixture.customer())
    #expect(loading.status == 503)
    #expect(loading.headers["Retry-After"] != nil)
    #expect(try loading.json(as: ProblemBody.self).code == "catalogueLoading")
    try fixture.app.commands.markCatalogueSynced()
    #expect(await fixture.client.get("/v1/hubs/h1/cart", headers: fixture.customer()).status == 404)
  }

  @Test func cartsSurviveARestart() async throws {
    let fixture = try CartFixture()
    try await fixture.put("p1", 2)
    try await fixture.put("p2", 5)
    let before = try await fixture.cart()
    let restarted = try CartFixture(
      dataDirectory: fixture.configuration.dataDirectory, sharing: fixture.location,
      serviceName: fixture.configuration.serviceName,
      clock: fixture.clock, seed: false)
    #expect(try await restarted.cart() == before)
  }

  /// Two clients, 25 PUTs each on one cart at once: every change gets the next version, none
  /// twice, none skipped, and the cart ends with the quantity of the last write per SKU.
  @Test func concurrentWritesToOneCartGetVersionsOneByOne() async throws {
    let fixture = try CartFixture()
    let replies = try await withThrowingTaskGroup(of: (sku: SKU, quantity: Int, cart: CartView).self) {
      group in
      for (sku, offset) in [("p4", 0), ("p5", 25)] {
        for index in 1...25 {
          group.addTask { (sku, offset + index, try await fixture.put(sku, offset + index)) }
        }
      }
      var all: [(sku: SKU, quantity: Int, cart: CartView)] = []
      for try await reply in group { all.append(reply) }
      return all
    }
    #expect(replies.map(\.cart.version).sorted() == Array(1...50))
    #expect(try fixture.cartEvents().map(\.version) == Array(1...50))
    let final = try await fixture.cart()
    #expect(final.version == 50)
    for sku in ["p4", "p5"] {
      let newest = replies.filter { $0.sku == sku }.max { $0.cart.version < $1.cart.version }!
      #expect(final.lines.first { $0.sku == sku }?.quantity == newest.quantity)
      // Each reply shows its own write.
      for reply in replies where reply.sku == sku {
        #expect(reply.cart.lines.first { $0.sku == sku }?.quantity == reply.quantity)
      }
    }
  }
}

/// The in-memory replies stay exactly what the database says (on PostgreSQL nothing is
/// remembered, and the same answers come from the database).
@Suite struct CartMemoryTests {
  /// Two replicas on one PostgreSQL database: a write through one is what the other answers,
  /// for reads and for the next write (which must not build on a remembered older cart).
  @Test func replicasNeverAnswerOrBuildOnAnOlderCart() async throws {
    let location = try TestEngine.postgres.freshLocation("cart")
    defer { location.remove() }
    let replicaA = try CartFixture(sharing: location)
    let replicaB = try CartFixture(sharing: location, seed: false, publishesChanges: true)
    _ = try await replicaA.put("p1", 2)
    #expect(try await replicaB.cart().lines.map(\.quantity) == [2])
    _ = try await replicaA.put("p1", 3)
    _ = try await replicaA.put("p4", 1)
    let seen = try await replicaB.cart()
    #expect(seen.lines.map(\.quantity) == [3, 1])
    #expect(seen.version == 3)
    _ = try await replicaB.put("p5", 1)
    let final = try await replicaA.cart()
    #expect(final.version == 4)
    #expect(final.lines.map(\.sku) == ["p1", "p4", "p5"])
    // A price change that replica B's consumer applied is in replica A's next write.
    try replicaB.app.commands.applyStockChanged(
      StockChanged(
        hub: "h1", sku: "p4", name: "Coffee", available: 50, price: CartFixture.eur(1100), deposit: nil),
      version: 2, correlationID: nil)
    let repriced = try await replicaA.put("p5", 2)
    #expect(repriced.lines.first { $0.sku == "p4" }?.unitPrice == CartFixture.eur(1100))
  }

  /// Fifty writes to one cart at once, spread over two replicas on one PostgreSQL database: no
  /// update is lost and the versions rise one by one, as with one process.
  @Test func concurrentWritesThroughTwoReplicasGetVersionsOneByOne() async throws {
    let location = try TestEngine.postgres.freshLocation("cart")
    defer { location.remove() }
    let replicas = [
      try CartFixture(sharing: location),
      try CartFixture(sharing: location, seed: false, publishesChanges: true),
    ]
    let replies = try await withThrowingTaskGroup(of: (sku: SKU, quantity: Int, cart: CartView).self) {
      group in
      for (sku, offset) in [("p4", 0), ("p5", 25)] {
        for index in 1...25 {
          let replica = replicas[index % 2]
          group.addTask { (sku, offset + index, try await replica.put(sku, offset + index)) }
        }
      }
      var all: [(sku: SKU, quantity: Int, cart: CartView)] = []
      for try await reply in group { all.append(reply) }
      return all
    }
    #expect(replies.map(\.cart.version).sorted() == Array(1...50))
    #expect(try replicas[0].cartEvents().map(\.version) == Array(1...50))
    let final = try await replicas[1].cart()
    #expect(final.version == 50)
    for sku in ["p4", "p5"] {
      let newest = replies.filter { $0.sku == sku }.max { $0.cart.version < $1.cart.version }!
      #expect(final.lines.first { $0.sku == sku }?.quantity == newest.quantity)
    }
  }

  @Test func aSecondReadComesFromMemoryAndEveryKindOfChangeIsSeen() async throws {
    let fixture = try CartFixture()
    try await fixture.put("p1", 2)
    let first = try await fixture.cart()
    #expect(fixture.app.commands.replies.count == (fixture.app.commands.replies.remembers ? 1 : 0))
    #expect(try await fixture.cart() == first)
    // A stock event, a hub change (even for an empty cart), a confirmed order.
    try fixture.app.commands.applyStockChanged(
      StockChanged(
        hub: "h1", sku: "p1", name: "Oat milk", available: 1, price: CartFixture.eur(129),
        deposit: CartFixture.eur(25)),
      version: 2, correlationID: nil)
    #expect(try await fixture.cart().lines.first?.quantity == 1)
    #expect(try await fixture.cart(user: "empty").blocker == .belowMinimum(missing: CartFixture.eur(1000)))
    var hub = CartFixture.hubs[0].value
    hub.pricing.minimumOrder = CartFixture.eur(1500)
    try fixture.app.commands.applyHubChanged(
      hub, version: 2, correlationID: nil)
    #expect(try await fixture.cart(user: "empty").blocker == .belowMinimum(missing: CartFixture.eur(1500)))
    try fixture.app.commands.applyOrderConfirmed(
      user: "u1", hub: "h1", messageID: "o1", consumer: "cart", correlationID: nil)
    #expect(try await fixture.cart().lines.isEmpty)
  }

  @Test func aHubThatClosesIsBlockedWithoutAnyWrite() async throws {
    // Open 08:00–20:00 Berlin; read at 19:59:30, then at 20:00:30.
    let clock = ManualClock(Timestamp.date(from: "2026-11-30T18:59:30Z")!)
    let fixture = try CartFixture(clock: clock)
    var hub = CartFixture.hubs[0].value
    hub.hours = .daily(opens: LocalTime("08:00")!, closes: LocalTime("20:00")!)
    try fixture.app.commands.applyHubChanged(
      hub, version: 2, correlationID: nil)
    try await fixture.put("p4", 1)
    #expect(try await fixture.cart().blocker == nil)
    #expect(fixture.app.commands.replies.count == (fixture.app.commands.replies.remembers ? 1 : 0))
    clock.advance(by: 60)
    let closed = try await fixture.cart()
    #expect(closed.blocker == .hubClosed(opensAt: Timestamp.date(from: "2026-12-01T07:00:00Z")))
  }
}
