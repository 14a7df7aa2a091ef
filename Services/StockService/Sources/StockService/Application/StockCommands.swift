import Foundation
import GrocerContracts
import GrocerCore
import GrocerRuntime
import GrocerStorage

/// StockService's use cases, one method per intent: each opens one transaction on the store,
/// loads what it needs, asks Domain what to do, and records the new state with its
/// `stock.changed` / `hub.changed` events in the outbox in that transaction, so no change is ever
/// published without being stored, or stored without being published. The HTTP controller and
/// the event consumers call these; neither decides.
public final class StockCommands: Sendable {
  public let store: StockStore
  let clock: any WallClock
  let ids: any IDGenerator
  /// How long a hold lasts without an order outcome.
  private let reservationTTL: TimeInterval
  private let logger: Logger

  public init(
    store: StockStore, clock: any WallClock, ids: any IDGenerator, reservationTTL: TimeInterval,
    logger: Logger = .discarding()
  ) {
    self.store = store
    self.clock = clock
    self.ids = ids
    self.reservationTTL = reservationTTL
    self.logger = logger
  }

  // MARK: Hubs and products

  /// Creates or replaces a hub; publishes `hub.changed`. Returns whether it was created.
  @discardableResult
  public func upsertHub(_ hub: Hub, correlationID: String?) throws -> Bool {
    try store.database.write { db in try upsertHub(id: hub.id, correlationID: correlationID, db) { _ in hub }
    }
    .created
  }

  /// Creates or changes hub `id` as `upsert` asks, validated against the hub as stored inside
  /// the write, so a rule that depends on it (its currency never changes) cannot be raced by
  /// another writer. Publishes `hub.changed` when anything changed.
  public func upsertHub(id: HubID, _ upsert: HubUpsert, correlationID: String?) throws -> (
    hub: Hub, created: Bool
  ) {
    try store.database.write { db in
      try upsertHub(id: id, correlationID: correlationID, db) { existing throws(DomainError) in
        try upsert.validate(hub: id, existing: existing)
      }
    }
  }

  private func upsertHub(
    id: HubID, correlationID: String?, _ db: any SQLConnection, _ make: (Hub?) throws -> Hub
  ) throws -> (hub: Hub, created: Bool) {
    let stored = try store.hubRecord(id, in: db)
    let hub = try make(stored?.hub)
    let change = CatalogueChange.of(hub, over: stored?.hub)
    guard let version = change.version(after: stored?.version ?? 0) else { return (hub, false) }
    let now = clock.now()
    try store.saveHub(hub, version: version, at: now, in: db)
    try store.append(
      HubChanged(hub: hub).message(
        id: ids.next(), occurredAt: now, correlationId: correlationID, version: version),
      in: db)
    return (hub, change == .created)
  }

  /// Creates or changes product `sku` at `hub` as staff `upsert` it, its amounts in the hub's
  /// currency (`ProductUpsert.validate`). Nil when there is no such hub.
  public func upsertProduct(hub: HubID, sku: SKU, _ upsert: ProductUpsert, correlationID: String?) throws -> (
    StockedProduct, created: Bool, movement: StockMovement?
  )? {
    guard let stored = try store.hub(hub) else { return nil }
    let product = try upsert.validate(sku: sku, currency: stored.currency)
    return try upsertProduct(hub: hub, product, correlationID: correlationID)
  }

  /// Creates or changes a product's catalogue fields (its counts stay); publishes `stock.changed`
  /// when anything changed. Returns the product, whether it was created, and the count that moved.
  public func upsertProduct(hub: HubID, _ product: Product, correlationID: String?) throws -> (
    StockedProduct, created: Bool, movement: StockMovement?
  ) {
    try store.database.writeLockingRows { db in
      let stored = try store.stock(hub: hub, sku: product.sku, in: db)
      let change = CatalogueChange.of(product, over: stored?.product)
      guard let reason = change.productReason, let version = change.version(after: stored?.level.version ?? 0)
      else { return (stored!.stocked, false, nil) }
      var next =
        stored ?? ProductStock(hub: hub, product: product, level: StockLevel(onHand: 0, held: 0, version: 0))
      next.product = product
      next.level.version = version
      let now = clock.now()
      if change == .created {
        try store.insertProduct(next, at: now, in: db)
      } else {
        try store.updateCatalogueFields(next, at: now, in: db)
      }
      try recordCatalogueChange(of: product, hub: hub, correlationID, db)
      try publish(next, reason: reason, correlationID, at: now, db)
      return (next.stocked, change == .created, next.stocked.movement)
    }
  }

  // MARK: Counts

  /// Sets the on-hand count after a stock take (what is held stays held).
  public func setStock(hub: HubID, sku: SKU, onHand: Int, actor: String, correlationID: String?)
    throws(StockStoreError) -> (StockedProduct, StockMovement?)
  {
    try changeCount(hub: hub, sku: sku, .set(onHand), actor: actor, correlationID: correlationID)
  }

  /// Applies a signed adjustment to the on-hand count.
  public func adjustStock(
    hub: HubID, sku: SKU, adjustment: StockAdjustment, actor: String, correlationID: String?
  ) throws(StockStoreError) -> (StockedProduct, StockMovement?) {
    try changeCount(hub: hub, sku: sku, .adjust(adjustment), actor: actor, correlationID: correlationID)
  }

  /// A staff count change: the new count, its audit row and its `stock.changed`; nothing when
  /// the count is what is on hand already.
  private func changeCount(
    hub: HubID, sku: SKU, _ change: CountChange, actor: String, correlationID: String?
  ) throws(StockStoreError) -> (StockedProduct, StockMovement?) {
    do {
      return try store.database.writeLockingRows { db in
        guard var stock = try store.stock(hub: hub, sku: sku, in: db) else {
          throw StockStoreError.domain(.unknownProduct(sku))
        }
        let current = stock.level.onHand
        let target: Int
        do throws(DomainError) { target = try change.target(from: current) } catch {
          throw StockStoreError.domain(error)
        }
        guard stock.level.count(target) else { return (stock.stocked, nil) }
        let now = clock.now()
        try store.saveLevels([(stock.product.sku, stock.level)], hub: stock.hub, at: now, in: db)
        try store.recordAdjustment(
          hub: hub, sku: sku, delta: target - current, reason: change.reason, actor: actor, at: now, in: db)
        try publish(stock, reason: change.reason, correlationID, at: now, db)
        return (stock.stocked, stock.stocked.movement)
      }
    } catch let error as StockStoreError {
      throw error
    } catch {
      throw .storage(error)
    }
  }

  // MARK: Reservations

  /// Decides a reservation request all-or-nothing and, when it holds, stores it with the
  /// counts it takes out of availability (publishing their `stock.changed`), in one transaction.
  /// Holds at the hub that expired are released first, so what they held counts as available.
  ///
  /// Every order at a hub writes the same few products, so this and the other writers of counts
  /// run as `writeLockingRows`: the reservation and each product are read once, locked, products
  /// in SKU order.
  public func reserve(_ request: ReservationRequest, correlationID: String?) throws -> (
    ReservationReply, [StockMovement]
  ) {
    // Malformed requests are answered before any database work.
    do { _ = try request.validate() } catch { return (.rejected(orderId: request.orderId, error), []) }
    let now = clock.now()
    return try store.database.writeLockingRows { db in
      guard let hub = try store.hubWithArea(request.hub, in: db) else {
        return (.rejected(orderId: request.orderId, .unknownHub(request.hub)), [])
      }
      var movements = try releaseExpired(hub: request.hub, now: now, correlationID: correlationID, db)
      let stored = try store.reservation(request.orderId, in: db)
      if let late = ReservationRules.lateRequestReply(request, releaseReason: stored?.releaseReason) {
        return (late, movements)
      }
      // A new order must go where the hub delivers; a hub without an area takes any point.
      if stored == nil, let point = request.deliverTo,
        let area = try hub.area(), !area.contains(point)
      {
        return (.rejected(orderId: request.orderId, .outsideDeliveryArea(hub: request.hub)), movements)
      }
      var stocks = try store.stocks(hub: request.hub, skus: Set(request.lines.map(\.sku)).sorted(), in: db)
      let decision = ReservationRules.decide(
        request, existing: stored?.reservation, available: stocks.mapValues(\.level.available), now: now,
        timeToLive: reservationTTL)
      guard case .hold(let reservation, _) = decision else { return (decision.reply, movements) }
      try store.insertReservation(reservation, in: db)
      var changed: [OutgoingMessage] = []
      var levels: [(sku: SKU, level: StockLevel)] = []
      for line in reservation.lines {
        guard var stock = stocks[line.sku] else { continue }
        stock.level.hold(line.quantity)
        stocks[line.sku] = stock
        levels.append((line.sku, stock.level))
        changed.append(message(stock, reason: StockChangeReason.reserved, correlationID, at: now))
        movements.append(stock.stocked.movement)
      }
      try store.saveLevels(levels, hub: request.hub, at: now, in: db)
      try store.append(contentsOf: changed, in: db)
      return (decision.reply, movements)
    }
  }

  /// Applies an order outcome once (the inbox keeps redeliveries from acting twice):
  /// `order.confirmed` commits the reservation, `order.declined`/`order.cancelled` release it
  /// (`OrderOutcomeRules`).
  public func applyOrderOutcome(
    _ kind: OrderOutcome.Kind, orderId: String, hub: HubID?, messageID: String, consumer: String,
    correlationID: String?, purchase: (user: String, lines: [OrderOutcome.Line])? = nil
  ) throws -> (movements: [StockMovement], effect: OutcomeEffect) {
    let now = clock.now()
    return try store.database.writeLockingRows { db in
      guard try store.claim(messageID: messageID, consumer: consumer, at: now, in: db) else {
        return ([], .nothingToDo)
      }
      // What a customer bought feeds their buy again and the products' popularity.
      if kind == .confirmed, let hub, let purchase {
        try store.recordPurchase(hub: hub, user: purchase.user, lines: purchase.lines, at: now, in: db)
      }
      let status = try store.reservationStatus(orderId, in: db)
      let decision = OrderOutcomeRules.decide(kind, reservation: status)
      var movements: [StockMovement] = []
      switch decision {
      case .nothing:
        break
      case .markReleased:
        try store.insertReleasedMarker(
          orderId: orderId, hub: hub ?? "", reason: ReleaseReason.outcomeFirst, at: now, in: db)
      case .finish(let state, let reason):
        movements = try finish(
          orderId: orderId, hub: status!.hub, lines: status!.lines, as: state, reason: reason, correlationID,
          at: now, db)
      case .takeAfterExpiry:
        try store.finishReservation(orderId, as: .committed, releaseReason: nil, at: now, in: db)
        movements = try moveLines(
          of: orderId, hub: status!.hub, lines: status!.lines, reason: StockChangeReason.orderConfirmedLate,
          correlationID, at: now, db
        ) { line, level in level.take(line.quantity, heldToo: false) }
      }
      return (movements, OrderOutcomeRules.effect(of: decision))
    }
  }

  /// Releases every held reservation past its expiry; returns the counts that moved.
  public func releaseExpired() throws -> [StockMovement] {
    let now = clock.now()
    return try store.database.writeLockingRows { db in
      try releaseExpired(hub: nil, now: now, correlationID: nil, db)
    }
  }

  private func releaseExpired(hub: HubID?, now: Date, correlationID: String?, _ db: any SQLConnection) throws
    -> [StockMovement]
  {
    var movements: [StockMovement] = []
    for expired in try store.heldReservations(expiredAt: now, hub: hub, in: db) {
      movements += try finish(
        orderId: expired.orderId, hub: expired.hub, lines: expired.lines, as: .released,
        reason: ReleaseReason.expired, correlationID, at: now, db)
    }
    return movements
  }

  /// Finishes a held reservation as `state` and moves each line's count as
  /// `ReservationFinish` says; returns the counts that were published.
  private func finish(
    orderId: String, hub: HubID, lines: [ReservationLine], as state: Reservation.State, reason: String,
    _ correlationID: String?,
    at now: Date, _ db: any SQLConnection
  ) throws -> [StockMovement] {
    try store.finishReservation(
      orderId, as: state, releaseReason: state == .released ? reason : nil, at: now, in: db)
    return try moveLines(of: orderId, hub: hub, lines: lines, reason: reason, correlationID, at: now, db) {
      line, level in
      ReservationFinish.apply(state, quantity: line.quantity, to: &level)
    }
  }

  /// Moves the count of each of a reservation's lines as `change` says (their products read and
  /// locked at once, in SKU order), stores them, and publishes those `change` says to, warning
  /// when an order took more than was on hand. Returns the counts that were published.
  private func moveLines(
    of orderId: String, hub: HubID, lines: [ReservationLine], reason: String, _ correlationID: String?,
    at now: Date,
    _ db: any SQLConnection, _ change: (ReservationLine, inout StockLevel) -> StockLevel.Taking
  ) throws -> [StockMovement] {
    var stocks = try store.stocks(hub: hub, skus: Set(lines.map(\.sku)).sorted(), in: db)
    var changed: [OutgoingMessage] = []
    var movements: [StockMovement] = []
    var levels: [(sku: SKU, level: StockLevel)] = []
    for line in lines {
      guard var stock = stocks[line.sku] else { continue }
      let onHand = stock.level.onHand
      let taking = change(line, &stock.level)
      if taking.oversold {
        logger.warning(
          "order takes more than is on hand",
          [
            "hub": hub, "sku": line.sku, "order.id": orderId, "stock.onHand": "\(onHand)",
            "order.quantity": "\(line.quantity)",
          ])
      }
      stocks[line.sku] = stock
      levels.append((line.sku, stock.level))
      guard taking.publishes else { continue }
      changed.append(message(stock, reason: reason, correlationID, at: now))
      movements.append(stock.stocked.movement)
    }
    try store.saveLevels(levels, hub: hub, at: now, in: db)
    try store.append(contentsOf: changed, in: db)
    return movements
  }

  /// Forgets processed event ids older than `retention`: a redelivery comes within minutes,
  /// never days. Returns how many were removed.
  @discardableResult
  public func purgeInbox(retention: TimeInterval = 7 * 86_400) throws -> Int {
    try store.purgeInbox(olderThan: clock.now().addingTimeInterval(-retention))
  }

  // MARK: Demo

  /// Loads the demo assortment unless its hubs exist already. Returns whether it loaded.
  public func loadDemo(_ demo: DemoAssortment) throws -> Bool {
    try store.database.write { db in
      let now = clock.now()
      if try !store.hubIDs(in: db).isDisjoint(with: demo.hubs.map(\.id)) {
        try loadDemoCatalogue(demo, at: now, db)
        return false
      }
      for hub in demo.hubs { _ = try upsertHub(id: hub.id, correlationID: "demo", db) { _ in hub } }
      for (hub, area) in demo.areas { try store.saveDeliveryArea(area, hub: hub, at: now, in: db) }
      for hub in demo.hubs {
        try store.saveCatalogueLayout(
          hub: hub.id, tree: demo.categories, home: demo.home, version: 1, at: now, in: db)
        for product in demo.products {
          let stock = ProductStock(
            hub: hub.id, product: product,
            level: StockLevel(onHand: demo.counts[hub.id]?[product.sku] ?? 0, held: 0, version: 1))
          try store.insertProduct(stock, at: now, in: db)
          try publish(stock, reason: StockChangeReason.demoLoaded, "demo", at: now, db)
        }
      }
      return true
    }
  }

  /// Gives demo hubs loaded before the catalogue screens existed their tree, home and products'
  /// catalogue fields, once (a hub with a catalogue already is left alone). Counts, prices and
  /// versions stay: what changed is not in `stock.changed`.
  private func loadDemoCatalogue(_ demo: DemoAssortment, at now: Date, _ db: any SQLConnection) throws {
    for hub in demo.hubs where try store.hubExists(hub.id, in: db) {
      guard try store.catalogueLayout(hub: hub.id, in: db).version == 0 else { continue }
      try store.saveCatalogueLayout(
        hub: hub.id, tree: demo.categories, home: demo.home, version: 1, at: now, in: db)
      for product in demo.products {
        guard var stock = try store.stock(hub: hub.id, sku: product.sku, in: db) else { continue }
        stock.product.brand = product.brand
        stock.product.category = product.category
        stock.product.image = product.image
        stock.product.originalPrice =
          product.originalPrice.map { $0.minorUnits > stock.product.price.minorUnits ? $0 : nil } ?? nil
        try store.updateCatalogueFields(stock, at: now, in: db)
      }
    }
  }

  // MARK: Events

  /// Appends the product's `stock.changed` for its state now to the outbox.
  private func publish(
    _ stock: ProductStock, reason: String, _ correlationID: String?, at now: Date, _ db: any SQLConnection
  ) throws {
    try store.append(message(stock, reason: reason, correlationID, at: now), in: db)
  }

  /// The product's `stock.changed` for its state now.
  private func message(_ stock: ProductStock, reason: String, _ correlationID: String?, at now: Date)
    -> OutgoingMessage
  {
    stock.changed(reason: reason).message(
      id: ids.next(), occurredAt: now, correlationId: correlationID, version: stock.level.version)
  }
}

/// Why a use case was refused: a rule (shown to the caller) or storage trouble (a 500/503).
public enum StockStoreError: Error {
  case domain(DomainError)
  case storage(any Error)
}
