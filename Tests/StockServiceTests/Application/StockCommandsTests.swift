import Foundation
import GrocerContracts
import GrocerCore
import GrocerStorage
import GrocerTestSupport
import Testing

@testable import StockService

/// StockService's use cases on the selected engine (SQLite in a temporary file by default), without the broker: each change
/// is stored with its events in the outbox, and a change that changes nothing writes nothing.
@Suite struct StockCommandsTests {
  let clock = ManualClock()
  let commands: StockCommands
  let demo = DemoAssortment.generate(productsPerHub: 6)
  private let cleanup: DatabaseCleanup

  init() throws {
    let location = try TestEngine.selected.freshLocation("stock")
    cleanup = DatabaseCleanup(location)
    let database = try location.open(migrations: StockSchema.migrations)
    commands = StockCommands(
      store: StockStore(database: database), clock: clock, ids: SequentialIDs(prefix: "ev"),
      reservationTTL: 600)
    #expect(try commands.loadDemo(demo))
  }

  /// The outbox's events, oldest first.
  func events() throws -> [EventEnvelope] {
    try commands.store.database.read { db in
      try Outbox.pending(limit: 100_000, in: db).map {
        try JSON.decode(EventEnvelope.self, from: $0.message.body)
      }
    }
  }

  func reasons(of sku: SKU, hub: HubID = "h1") throws -> [String?] {
    try events().filter { $0.subject == "stock/\(hub)/\(sku)" }.map {
      try $0.payload(as: StockChanged.self).reason
    }
  }

  func sku(minimum: Int) -> SKU {
    demo.products.first { (demo.counts["h1"]?[$0.sku] ?? 0) >= minimum }!.sku
  }

  func adjustmentRows() throws -> Int {
    try commands.store.database.read { db in
      try db.queryOne("SELECT COUNT(*) FROM stock_adjustments")!.int(0)
    }
  }

  @Test func theDemoLoadsOnceWithAnEventForEveryHubAndProduct() throws {
    let loaded = try events()
    #expect(loaded.filter { $0.type == StockEventType.hubChanged }.count == demo.hubs.count)
    #expect(
      loaded.filter { $0.type == StockEventType.stockChanged }.count == demo.hubs.count * demo.products.count)
    #expect(try !commands.loadDemo(demo))
    #expect(try events().count == loaded.count)
  }

  @Test func aProductIsCreatedChangedAndLeftAloneWhenNothingDiffers() throws {
    let product = Product(sku: "new-1", name: "Oat milk", price: eur(199))
    let (created, isNew, movement) = try commands.upsertProduct(hub: "h1", product, correlationID: "r1")
    #expect(isNew)
    #expect(created.version == 1)
    #expect(created.available == 0)
    #expect(movement == StockMovement(hub: "h1", sku: "new-1", version: 1))

    let (same, _, none) = try commands.upsertProduct(hub: "h1", product, correlationID: "r2")
    #expect(same == created)
    #expect(none == nil)

    var dearer = product
    dearer.price = eur(249)
    let (changed, again, _) = try commands.upsertProduct(hub: "h1", dearer, correlationID: "r3")
    #expect(!again)
    #expect(changed.version == 2)
    #expect(changed == (try commands.store.product(hub: "h1", sku: "new-1")))
    #expect(try reasons(of: "new-1") == ["productCreated", "productChanged"])
  }

  @Test func aStockTakeOfTheCountOnHandWritesNothing() throws {
    let sku = sku(minimum: 1)
    let onHand = demo.counts["h1"]![sku]!
    let (unchanged, none) = try commands.setStock(
      hub: "h1", sku: sku, onHand: onHand, actor: "staff-1", correlationID: nil)
    #expect(none == nil)
    #expect(unchanged.version == 1)
    #expect(try adjustmentRows() == 0)

    let (counted, movement) = try commands.setStock(
      hub: "h1", sku: sku, onHand: onHand + 3, actor: "staff-1", correlationID: nil)
    #expect(counted.available == onHand + 3)
    #expect(movement?.version == 2)
    #expect(try adjustmentRows() == 1)
    #expect(try reasons(of: sku) == ["demoLoaded", "stockTake"])
  }

  @Test func anAdjustmentBelowZeroIsRefusedAndWritesNothing() throws {
    let sku = sku(minimum: 1)
    let onHand = demo.counts["h1"]![sku]!
    let before = try events().count
    #expect(throws: StockStoreError.self) {
      try commands.adjustStock(
        hub: "h1", sku: sku, adjustment: StockAdjustment(delta: -(onHand + 1), reason: .lost), actor: "s",
        correlationID: nil)
    }
    #expect(try events().count == before)
    let (adjusted, _) = try commands.adjustStock(
      hub: "h1", sku: sku, adjustment: StockAdjustment(delta: -1, reason: .damaged), actor: "s",
      correlationID: nil)
    #expect(adjusted.available == onHand - 1)
    #expect(try reasons(of: sku).last == "damaged")
  }

  @Test func aHoldIsStoredWithItsEventsAndAShortfallStoresNothing() throws {
    let sku = sku(minimum: 3)
    let onHand = demo.counts["h1"]![sku]!
    let request = ReservationRequest(
      orderId: "o1", hub: "h1", lines: [ReservationLine(sku: sku, quantity: onHand)])
    let (reply, movements) = try commands.reserve(request, correlationID: "c1")
    #expect(reply.status == .reserved)
    #expect(movements == [StockMovement(hub: "h1", sku: sku, version: 2)])
    #expect(try commands.store.product(hub: "h1", sku: sku)?.available == 0)
    #expect(try reasons(of: sku) == ["demoLoaded", "reserved"])

    let more = ReservationRequest(orderId: "o2", hub: "h1", lines: [ReservationLine(sku: sku, quantity: 1)])
    let (short, none) = try commands.reserve(more, correlationID: nil)
    #expect(short.status == .shortfall)
    #expect(none.isEmpty)
    #expect(try reasons(of: sku).count == 2)

    clock.advance(by: 601)
    #expect(try commands.releaseExpired() == [StockMovement(hub: "h1", sku: sku, version: 3)])
    #expect(try commands.store.product(hub: "h1", sku: sku)?.available == onHand)
    #expect(try reasons(of: sku).last == "reservationExpired")
  }

  @Test func aNewOrderMustGoWhereItsHubDelivers() throws {
    let sku = sku(minimum: 1)
    func reserve(_ order: String, _ hub: HubID, _ point: GeoPoint?) throws -> ReservationReply {
      try commands.reserve(
        ReservationRequest(
          orderId: order, hub: hub, lines: [ReservationLine(sku: sku, quantity: 1)], deliverTo: point),
        correlationID: nil
      ).0
    }
    let potsdam = GeoPoint(lat: 52.40, lng: 13.06)
    let refused = try reserve("o1", "h1", potsdam)
    #expect(refused.status == .rejected && refused.error?.code == "outsideDeliveryArea")
    #expect(try commands.store.product(hub: "h1", sku: sku)?.available == demo.counts["h1"]![sku]!)
    // In h1's area, on its border, and (older clients) without a point: held.
    #expect(try reserve("o2", "h1", GeoPoint(lat: 52.54, lng: 13.42)).status == .reserved)
    #expect(try reserve("o3", "h1", GeoPoint(lat: 52.525, lng: 13.43)).status == .reserved)
    #expect(try reserve("o4", "h1", nil).status == .reserved)
    // Asked again for a held order, the hold stands whatever the point.
    #expect(try reserve("o2", "h1", potsdam).status == .reserved)
    // A hub without an area takes any point.
    let hub = Hub(
      id: "h9", name: "Anywhere", hours: .daily(opens: .midnight, closes: .endOfDay),
      pricing: demo.hubs[0].pricing, currency: "EUR")
    try commands.upsertHub(hub, correlationID: nil)
    var product = demo.products[0]
    product.category = nil
    _ = try commands.upsertProduct(hub: "h9", product, correlationID: nil)
    _ = try commands.setStock(hub: "h9", sku: demo.products[0].sku, onHand: 5, actor: "t", correlationID: nil)
    let anywhere = try commands.reserve(
      ReservationRequest(
        orderId: "o5", hub: "h9", lines: [ReservationLine(sku: demo.products[0].sku, quantity: 1)],
        deliverTo: potsdam), correlationID: nil
    ).0
    #expect(anywhere.status == .reserved)
  }

  @Test func anOutcomeIsAppliedOnceAndADeclineFirstLeavesAMarker() throws {
    let sku = sku(minimum: 2)
    let request = ReservationRequest(
      orderId: "o1", hub: "h1", lines: [ReservationLine(sku: sku, quantity: 2)])
    _ = try commands.reserve(request, correlationID: nil)
    let (released, effect) = try commands.applyOrderOutcome(
      .declined, orderId: "o1", hub: "h1", messageID: "m1", consumer: "stock", correlationID: nil)
    #expect(effect == .applied)
    #expect(released.count == 1)
    #expect(try reasons(of: sku).last == "orderDeclined")
    let (_, replay) = try commands.applyOrderOutcome(
      .declined, orderId: "o1", hub: "h1", messageID: "m1", consumer: "stock", correlationID: nil)
    #expect(replay == .nothingToDo)

    let (_, first) = try commands.applyOrderOutcome(
      .cancelled, orderId: "o9", hub: "h1", messageID: "m2", consumer: "stock", correlationID: nil)
    #expect(first == .unknownOrder)
    let late = ReservationRequest(orderId: "o9", hub: "h1", lines: [ReservationLine(sku: sku, quantity: 1)])
    #expect(try commands.reserve(late, correlationID: nil).0.error?.code == "reservationReleased")
  }

  @Test func aReservationOfSeveralProductsMovesEachAndPublishesEachInOneGo() throws {
    let skus = demo.products.filter { (demo.counts["h1"]?[$0.sku] ?? 0) >= 2 }.prefix(3).map(\.sku)
    try #require(skus.count == 3)
    let before = try skus.map { try #require(try commands.store.product(hub: "h1", sku: $0)).available }
    let lines = skus.reversed().map { ReservationLine(sku: $0, quantity: 2) }
    let published = try events().count
    let (reply, movements) = try commands.reserve(
      ReservationRequest(orderId: "o1", hub: "h1", lines: lines), correlationID: "c1")
    #expect(reply.status == .reserved)
    #expect(Set(movements.map(\.sku)) == Set(skus))
    let held = try events().dropFirst(published)
    #expect(held.count == 3)
    #expect(
      try held.map { try $0.payload(as: StockChanged.self).reason } == ["reserved", "reserved", "reserved"])
    #expect(held.allSatisfy { $0.correlationId == "c1" })
    for (sku, available) in zip(skus, before) {
      #expect(try commands.store.product(hub: "h1", sku: sku)?.available == available - 2)
    }

    // Confirmed: the counts on hand go down with what was held, so what is available stays and
    // nothing is published.
    let (taken, effect) = try commands.applyOrderOutcome(
      .confirmed, orderId: "o1", hub: "h1", messageID: "m1", consumer: "stock", correlationID: nil)
    #expect(effect == .applied)
    #expect(taken.isEmpty)
    #expect(try events().count == published + 3)
    for (sku, available) in zip(skus, before) {
      #expect(try commands.store.product(hub: "h1", sku: sku)?.available == available - 2)
    }

    // Another order declined: each of its products is released and published.
    _ = try commands.reserve(ReservationRequest(orderId: "o2", hub: "h1", lines: lines), correlationID: nil)
    let (released, _) = try commands.applyOrderOutcome(
      .declined, orderId: "o2", hub: "h1", messageID: "m2", consumer: "stock", correlationID: nil)
    #expect(Set(released.map(\.sku)) == Set(skus))
    #expect(try skus.map { try reasons(of: $0).last } == ["orderDeclined", "orderDeclined", "orderDeclined"])
  }
}
