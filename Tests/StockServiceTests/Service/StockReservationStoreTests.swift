import Foundation
import GrocerContracts
import GrocerCore
import GrocerHTTP
import GrocerRuntime
import Testing

@testable import StockService

/// Reservations and order outcomes in the store, in the orders a real network delivers them.
@Suite struct StockReservationStoreTests {
  private func reserve(
    _ fixture: StockFixture, _ orderId: String, _ sku: SKU, _ quantity: Int, hub: HubID = "h1"
  )
    throws -> ReservationReply
  {
    try fixture.app.commands.reserve(
      ReservationRequest(orderId: orderId, hub: hub, lines: [ReservationLine(sku: sku, quantity: quantity)]),
      correlationID: nil
    ).0
  }

  private func outcome(
    _ fixture: StockFixture, _ kind: OrderOutcome.Kind, _ orderId: String, hub: HubID? = "h1",
    id: String = UUID().uuidString
  ) throws -> OutcomeEffect {
    try fixture.app.commands.applyOrderOutcome(
      kind, orderId: orderId, hub: hub, messageID: id, consumer: "stock", correlationID: nil
    ).effect
  }

  private func onHandAndHeld(_ fixture: StockFixture, _ sku: SKU) throws -> [Int] {
    try fixture.app.store.database.read { db in
      try db.queryOne("SELECT on_hand, held FROM products WHERE hub = 'h1' AND sku = ?", sku).map {
        [try $0.int(0), try $0.int(1)]
      } ?? []
    }
  }

  @Test func aRedeliveredOutcomeHasNoSecondEffect() throws {
    let fixture = try StockFixture()
    let sku = fixture.sku(minimum: 5)
    let onHand = fixture.demo.counts["h1"]![sku]!
    #expect(try reserve(fixture, "o-twice", sku, 2).status == .reserved)
    #expect(try outcome(fixture, .confirmed, "o-twice", id: "ev-1") == .applied)
    #expect(try outcome(fixture, .confirmed, "o-twice", id: "ev-1") == .nothingToDo)
    #expect(try onHandAndHeld(fixture, sku) == [onHand - 2, 0])
  }

  /// A commit takes as much off held as off on hand: what can be ordered does not move, so
  /// nothing is published and no version rises (no cache or cart could use it); a confirmation
  /// after the hold expired does move it, and says so.
  @Test func aNormalCommitPublishesNothingAndALateOneDoes() throws {
    let fixture = try StockFixture()
    let sku = fixture.sku(minimum: 5)
    func events() throws -> [String] {
      try fixture.outbox().filter { $0.subject == "stock/h1/\(sku)" }.map {
        try $0.payload(as: StockChanged.self).reason ?? ""
      }
    }
    let before = try events().count
    let version = try fixture.app.store.product(hub: "h1", sku: sku)?.version
    #expect(try reserve(fixture, "o-quiet", sku, 2).status == .reserved)
    #expect(try events().count == before + 1, "the reservation moved what is available")
    let reserved = try fixture.app.store.product(hub: "h1", sku: sku)?.version
    #expect(try outcome(fixture, .confirmed, "o-quiet") == .applied)
    #expect(try events().count == before + 1, "the commit moved nothing available")
    #expect(try fixture.app.store.product(hub: "h1", sku: sku)?.version == reserved)
    #expect(reserved != version)

    #expect(try reserve(fixture, "o-late", sku, 1).status == .reserved)
    fixture.clock.advance(by: fixture.configuration.reservationTTL + 1)
    _ = try fixture.app.commands.releaseExpired()
    let released = try events().count
    #expect(try outcome(fixture, .confirmed, "o-late") == .confirmedAfterExpiry)
    #expect(try events().count == released + 1)
    #expect(try events().last == "orderConfirmedLate")
  }

  @Test func aConfirmationAfterTheHoldExpiredStillTakesTheGoods() throws {
    let fixture = try StockFixture()
    let sku = fixture.sku(minimum: 5)
    let onHand = fixture.demo.counts["h1"]![sku]!
    #expect(try reserve(fixture, "o-slow", sku, 2).status == .reserved)
    fixture.clock.advance(by: fixture.configuration.reservationTTL + 1)
    #expect(try fixture.app.commands.releaseExpired().count == 1)
    #expect(try onHandAndHeld(fixture, sku) == [onHand, 0])
    #expect(try outcome(fixture, .confirmed, "o-slow") == .confirmedAfterExpiry)
    #expect(try onHandAndHeld(fixture, sku) == [onHand - 2, 0])
    #expect(try outcome(fixture, .confirmed, "o-slow") == .nothingToDo)
  }

  @Test func aDeclineBeforeItsReservationLeavesNothingHeld() throws {
    let fixture = try StockFixture()
    let sku = fixture.sku(minimum: 5)
    let onHand = fixture.demo.counts["h1"]![sku]!
    #expect(try outcome(fixture, .declined, "o-late") == .unknownOrder)
    let late = try reserve(fixture, "o-late", sku, 3)
    #expect(late.status == .rejected)
    #expect(late.error?.code == "reservationReleased")
    #expect(try onHandAndHeld(fixture, sku) == [onHand, 0])
  }

  @Test func anOutcomeWithoutAHubIsStillApplied() throws {
    let fixture = try StockFixture()
    let sku = fixture.sku(minimum: 5)
    _ = try reserve(fixture, "o-nohub", sku, 1)
    #expect(try outcome(fixture, .cancelled, "o-nohub", hub: nil) == .applied)
    #expect(try onHandAndHeld(fixture, sku)[1] == 0)
  }

  @Test func aReservationAtAnUnknownHubIsRejected() throws {
    let fixture = try StockFixture()
    let reply = try reserve(fixture, "o-nowhere", "p00001", 1, hub: "h404")
    #expect(reply.status == .rejected)
    #expect(reply.error?.code == "unknownHub")
  }

  /// Several products' counts in one statement: each row gets its own values, a SKU given
  /// twice its last, and the hub's other products and other hubs keep theirs.
  @Test func countsOfSeveralProductsAreSavedInOneGoEachToItsRow() throws {
    let fixture = try StockFixture()
    let skus = fixture.demo.products.prefix(4).map(\.sku)
    let before = try skus.map { try onHandAndHeld(fixture, $0) }
    try fixture.app.store.database.write { db in
      try fixture.app.store.saveLevels(
        [
          (skus[1], StockLevel(onHand: 7, held: 1, version: 900)),
          (skus[0], StockLevel(onHand: 9, held: 2, version: 901)),
          (skus[1], StockLevel(onHand: 6, held: 3, version: 902)),
        ], hub: "h1", at: fixture.clock.now(), in: db)
    }
    #expect(try onHandAndHeld(fixture, skus[0]) == [9, 2])
    #expect(try onHandAndHeld(fixture, skus[1]) == [6, 3])
    #expect(try skus[2...].map { try onHandAndHeld(fixture, $0) } == Array(before[2...]))
    let versions = try fixture.app.store.database.read { db in
      try db.query(
        "SELECT sku, version FROM products WHERE hub = 'h1' AND sku IN (?, ?)", skus[0], skus[1]
      ).map { "\(try $0.string(0))=\(try $0.int(1))" }.sorted()
    }
    #expect(versions == ["\(skus[0])=901", "\(skus[1])=902"].sorted())
  }

  @Test func aHoldOnAProductThatVanishedDoesNotBlockTheHub() throws {
    let fixture = try StockFixture()
    let gone = fixture.demo.products[0].sku
    let other = fixture.demo.products.first {
      $0.sku != gone && (fixture.demo.counts["h1"]![$0.sku] ?? 0) >= 2
    }!.sku
    try fixture.app.store.database.write { db in
      try db.execute("UPDATE products SET on_hand = 5 WHERE hub = 'h1' AND sku = ?", gone)
    }
    #expect(try reserve(fixture, "o-gone", gone, 1).status == .reserved)
    try fixture.app.store.database.write { db in
      try db.execute("DELETE FROM products WHERE hub = 'h1' AND sku = ?", gone)
    }
    fixture.clock.advance(by: fixture.configuration.reservationTTL + 1)
    _ = try fixture.app.commands.releaseExpired()
    #expect(try reserve(fixture, "o-other", other, 1).status == .reserved)
  }

  @Test func anUnknownSKUIsRememberedSoTheNextLookupNeedsNoDatabase() async throws {
    let fixture = try StockFixture()
    let sku = fixture.sku()
    let target = "/v1/hubs/h1/stock?ids=\(sku),nosuchsku"
    let first = await fixture.client.get(target)
    #expect(first.status == 200)
    let again = fixture.app.router.respondImmediately(
      to: HTTPRequest(method: "GET", target: target + ",\(sku)"))
    #expect(again?.status == 200, "a lookup with a known-unknown id still went to the database")
  }

  @Test func aMissRefreshesTheHubsOtherAgedOutCountsInTheSameRead() async throws {
    let fixture = try StockFixture()
    let skus = Array(fixture.demo.products.map(\.sku).prefix(3))
    #expect(await fixture.client.get("/v1/hubs/h1/stock?ids=\(skus[0])").status == 200)
    #expect(await fixture.client.get("/v1/hubs/h1/stock?ids=\(skus[1]),\(skus[2])").status == 200)
    fixture.clock.advance(by: fixture.app.cache.timeToLive + 1)
    let aged = "/v1/hubs/h1/stock?ids=\(skus[1]),\(skus[2])"
    #expect(fixture.app.router.respondImmediately(to: HTTPRequest(method: "GET", target: aged)) == nil)
    #expect(Set(fixture.app.cache.expired(hub: "h1", now: fixture.clock.now(), limit: 10)) == Set(skus))
    // The first lookup after the counts aged out reads the others too…
    #expect(await fixture.client.get("/v1/hubs/h1/stock?ids=\(skus[0])").status == 200)
    #expect(fixture.app.cache.expired(hub: "h1", now: fixture.clock.now(), limit: 10).isEmpty)
    // …so a lookup of them is answered from memory again, with the count the database has.
    let again = fixture.app.router.respondImmediately(to: HTTPRequest(method: "GET", target: aged))
    #expect(again?.status == 200)
    let body = try #require(again).bodyString
    #expect(body.contains("\"\(skus[1])\":\(fixture.demo.counts["h1"]![skus[1]]!)"))
  }

  @Test func manyCountsAreReadInOneScanOfTheHubWithTheSameAnswers() throws {
    let fixture = try StockFixture()
    let asked = Array(fixture.demo.products.map(\.sku).prefix(3)) + ["nosuchsku"]
    let listed = try fixture.app.store.counts(hub: "h1", skus: asked)
    let scanned = try fixture.app.store.counts(hub: "h1", skus: asked, wholeHubAbove: 1)
    for sku in asked {
      #expect(scanned.first { $0.sku == sku } == listed.first { $0.sku == sku })
    }
    #expect(listed.first { $0.sku == "nosuchsku" }?.count == nil)
    #expect(listed.count == asked.count)
    // The scan brings the hub's other products too (and nothing of another hub).
    #expect(
      scanned.count == fixture.demo.products.filter { fixture.demo.counts["h1"]?[$0.sku] != nil }.count + 1)
  }

  @Test func aQueryWithOtherParametersIsNotRemembered() async throws {
    let fixture = try StockFixture()
    let sku = fixture.sku()
    _ = await fixture.client.get("/v1/hubs/h1/stock?ids=\(sku)")
    _ = await fixture.client.get("/v1/hubs/h1/stock?ids=\(sku)&junk=1")
    let now = fixture.clock.now()
    #expect(fixture.app.cache.rememberedReply(hub: "h1", query: "ids=\(sku)&junk=1", now: now) == nil)
  }

  @Test func aProductIdThatCannotExistIsNotFound() async throws {
    let fixture = try StockFixture()
    let response = await fixture.client.get("/v1/hubs/h1/products/bad%20sku")
    #expect(response.status == 404)
    #expect(try response.json(as: ProblemBody.self).code == "unknownProduct")
  }
}

@Suite struct StockInboxTests {
  @Test func oldInboxEntriesAreForgottenRecentOnesKept() throws {
    let fixture = try StockFixture()
    _ = try fixture.app.commands.applyOrderOutcome(
      .cancelled, orderId: "o-old", hub: "h1", messageID: "old", consumer: "stock", correlationID: nil)
    fixture.clock.advance(by: 8 * 86_400)
    _ = try fixture.app.commands.applyOrderOutcome(
      .cancelled, orderId: "o-new", hub: "h1", messageID: "new", consumer: "stock", correlationID: nil)
    #expect(try fixture.app.commands.purgeInbox() == 1)
    let (_, again) = try fixture.app.commands.applyOrderOutcome(
      .cancelled, orderId: "o-new", hub: "h1", messageID: "new", consumer: "stock", correlationID: nil)
    #expect(again == .nothingToDo)
  }
}

@Suite struct StockHubRulesTests {
  @Test func aHubsCurrencyNeverChanges() async throws {
    let fixture = try StockFixture()
    let hub = """
      {"currency":"USD",
       "hours":{"timeZone":"Europe/Berlin","weekly":[{"day":"mon","opens":"08:00","closes":"22:00"}]},
       "pricing":{"minimumOrder":{"minorUnits":1000,"currency":"USD"},"deliveryFee":{"minorUnits":199,"currency":"USD"},
                  "freeDeliveryFrom":null,"smallBasket":null}}
      """
    let eventsBefore = try fixture.outbox().count
    let response = await fixture.client.send(
      "PUT", "/v1/hubs/h1", headers: fixture.staff().merging(["Content-Type": "application/json"]) { $1 },
      body: hub)
    #expect(response.status == 422, "\(response.bodyString)")
    #expect(try response.json(as: ProblemBody.self).code == "currencyMismatch")
    #expect(try fixture.outbox().count == eventsBefore)
    #expect(try fixture.app.store.hub("h1")?.currency == "EUR")
  }
}

@Suite struct StockOversellTests {
  @Test func aConfirmationTakingMoreThanIsOnHandIsLoggedAndStopsAtZero() throws {
    let fixture = try StockFixture()
    let sink = LogSink.memory()
    let commands = StockCommands(
      store: fixture.app.store, clock: fixture.clock, ids: SequentialIDs(prefix: "ov"), reservationTTL: 600,
      logger: Logger(label: "test", sink: sink))
    let sku = fixture.sku(minimum: 5)
    _ = try commands.reserve(
      ReservationRequest(orderId: "o-over", hub: "h1", lines: [ReservationLine(sku: sku, quantity: 3)]),
      correlationID: nil)
    _ = try commands.setStock(hub: "h1", sku: sku, onHand: 1, actor: "staff", correlationID: nil)
    _ = try commands.applyOrderOutcome(
      .confirmed, orderId: "o-over", hub: "h1", messageID: "m-over", consumer: "stock", correlationID: nil)
    #expect(try fixture.app.store.product(hub: "h1", sku: sku)?.available == 0)
    #expect(sink.lines.contains { $0.contains("order takes more than is on hand") && $0.contains("o-over") })
  }
}
