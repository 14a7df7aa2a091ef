import Foundation
import GrocerContracts
import GrocerCore
import GrocerRuntime
import GrocerStorage

/// A product as stored: its catalogue fields, what is available now and its version.
public struct StockedProduct: Hashable, Sendable, Encodable {
  public var hub: HubID
  public var product: Product
  /// On hand minus what open reservations hold.
  public var available: Int
  /// Rises by one on every change of count or price: the `sequence` of its `stock.changed`.
  public var version: Int64

  enum CodingKeys: String, CodingKey { case sku, name, price, deposit, unitPrice, available }

  /// This version of the product, for dropping cached counts older than it.
  public var movement: StockMovement { StockMovement(hub: hub, sku: product.sku, version: version) }

  public func encode(to encoder: any Encoder) throws {
    var container = encoder.container(keyedBy: CodingKeys.self)
    try container.encode(product.sku, forKey: .sku)
    try container.encode(product.name, forKey: .name)
    try container.encode(product.price, forKey: .price)
    try container.encodeIfPresent(product.deposit, forKey: .deposit)
    try container.encodeIfPresent(product.unitPrice, forKey: .unitPrice)
    try container.encode(available, forKey: .available)
  }
}

/// A count that moved, for the local cache (the event does the same for other replicas).
public struct StockMovement: Hashable, Sendable {
  public var hub: HubID
  public var sku: SKU
  public var version: Int64
}

/// StockService's SQLite storage: hubs, products, counts and reservations.
///
/// Every change of count, price or hours writes its `stock.changed` / `hub.changed` event to the
/// outbox in the same transaction, so no change is ever published without being stored, or
/// stored without being published.
public final class StockStore: Sendable {
  let database: SQLiteDatabase
  private let clock: any WallClock
  private let ids: any IDGenerator
  private let source: String
  private let reservationTTL: TimeInterval
  private let logger: Logger

  public init(
    database: SQLiteDatabase, clock: any WallClock, ids: any IDGenerator, source: String,
    reservationTTL: TimeInterval, logger: Logger = .discarding()
  ) {
    self.database = database
    self.clock = clock
    self.ids = ids
    self.source = source
    self.reservationTTL = reservationTTL
    self.logger = logger
  }

  // MARK: Reads

  public func hub(_ id: HubID) throws -> Hub? {
    try database.read { db in
      try db.queryOne("SELECT body FROM hubs WHERE id = ?", id).map { row in
        try JSON.decode(Hub.self, from: row.data(0))
      }
    }
  }

  public func hubIDs() throws -> Set<HubID> {
    try database.read { db in Set(try db.query("SELECT id FROM hubs").map { try $0.string(0) }) }
  }

  public func product(hub: HubID, sku: SKU) throws -> StockedProduct? {
    try database.read { db in try Self.product(hub: hub, sku: sku, in: db) }
  }

  /// A page of products in SKU order, starting after `after`.
  public func products(hub: HubID, after: SKU?, limit: Int) throws -> [StockedProduct] {
    try database.read { db in
      try db.query(
        "SELECT \(Self.productColumns) FROM products WHERE hub = ? AND sku > ? ORDER BY sku LIMIT ?",
        hub, after ?? "", limit
      ).map { try Self.stockedProduct($0) }
    }
  }

  /// Available counts and versions of `skus` at `hub`. A SKU the hub does not have comes back
  /// with no count and version 0, so the cache remembers it as unknown instead of asking again
  /// (creating the product later publishes version 1, which replaces that entry).
  ///
  /// Past `wholeHubAbove` SKUs the hub's products are read in one scan instead (the rows of
  /// products not asked for come back too): a refresh of thousands of aged-out entries as one
  /// `IN` list of as many bound values took several milliseconds to build, compile and run.
  public func counts(hub: HubID, skus: [SKU], wholeHubAbove: Int = 256) throws -> [StockRow] {
    guard !skus.isEmpty else { return [] }
    let found = try database.read { db in
      let rows: [SQLRow]
      if skus.count > wholeHubAbove {
        rows = try db.query("SELECT sku, on_hand - held, version FROM products WHERE hub = ?", hub)
      } else {
        let placeholders = Array(repeating: "?", count: skus.count).joined(separator: ",")
        rows = try db.query(
          "SELECT sku, on_hand - held, version FROM products WHERE hub = ? AND sku IN (\(placeholders))",
          bindings: [hub] + skus)
      }
      return try rows.map {
        StockRow(sku: try $0.string(0), count: max(0, try $0.int(1)), sequence: try $0.int64(2))
      }
    }
    let known = Set(found.map(\.sku))
    return found + skus.filter { !known.contains($0) }.map { StockRow(sku: $0, count: nil, sequence: 0) }
  }

  // MARK: Catalogue snapshot

  /// Every hub as its latest `hub.changed` carried it, with that event's `sequence` as
  /// `version`, in id order (the `stock.catalogue` request/reply).
  public func catalogueHubs() throws -> [Versioned<HubChanged>] {
    try database.read { db in
      try db.query("SELECT body, version FROM hubs ORDER BY id").map { row in
        Versioned(HubChanged(hub: try JSON.decode(Hub.self, from: row.data(0))), version: try row.int64(1))
      }
    }
  }

  /// A page of `hub`'s products in SKU order after `after`, each as its latest `stock.changed`
  /// carried it (same `available`, `version` = that event's `sequence`; `reason` is nil), read
  /// from one snapshot. `next` is the `after` of the following page, nil on the last one.
  /// Returns nil when the hub does not exist.
  public func catalogueProducts(hub: HubID, after: SKU?, limit: Int) throws -> CataloguePage? {
    let limit = max(1, limit)
    return try database.read { db in
      guard try db.queryOne("SELECT 1 FROM hubs WHERE id = ?", hub) != nil else { return nil }
      // One row more than asked tells whether another page follows, without a second query.
      var rows = try db.query(
        "SELECT \(Self.productColumns) FROM products WHERE hub = ? AND sku > ? ORDER BY sku LIMIT ?",
        hub, after ?? "", limit + 1
      ).map { try Self.stockedProduct($0) }
      let more = rows.count > limit
      if more { rows.removeLast() }
      return CataloguePage(
        products: rows.map {
          Versioned(
            StockChanged(hub: hub, product: $0.product, available: $0.available, reason: nil),
            version: $0.version)
        },
        next: more ? rows.last?.product.sku : nil)
    }
  }

  // MARK: Staff writes

  /// Creates or replaces a hub; publishes `hub.changed`. Returns whether it was created.
  @discardableResult
  public func upsertHub(_ hub: Hub, correlationID: String?) throws -> Bool {
    try upsertHub(id: hub.id, correlationID: correlationID) { _ in hub }.created
  }

  /// Creates or changes hub `id` with what `make` builds from the hub as stored (nil when new),
  /// inside the write, so a rule that depends on the stored hub (its currency never changes)
  /// cannot be raced by another writer. Publishes `hub.changed` when anything changed.
  public func upsertHub(id: HubID, correlationID: String?, _ make: (Hub?) throws -> Hub) throws -> (
    hub: Hub, created: Bool
  ) {
    try database.write { db in
      let existing = try db.queryOne("SELECT body, version FROM hubs WHERE id = ?", id)
      let current = try existing.map { try JSON.decode(Hub.self, from: $0.data(0)) }
      let hub = try make(current)
      if current == hub { return (hub, false) }
      let version = (try existing?.int64(1) ?? 0) + 1
      try db.execute(
        """
        INSERT INTO hubs (id, body, version, updated_at) VALUES (?, ?, ?, ?)
        ON CONFLICT (id) DO UPDATE SET body = excluded.body, version = excluded.version,
          updated_at = excluded.updated_at
        """, hub.id, try JSON.encode(hub), version, clock.now().timeIntervalSince1970)
      try Outbox.append(
        HubChanged(hub: hub).message(
          id: ids.next(), occurredAt: clock.now(), correlationId: correlationID, version: version),
        in: db)
      return (hub, existing == nil)
    }
  }

  /// Creates or changes a product's catalogue fields; publishes `stock.changed` when anything
  /// changed. Returns the product and whether it was created.
  public func upsertProduct(hub: HubID, _ product: Product, correlationID: String?) throws -> (
    StockedProduct, created: Bool, movement: StockMovement?
  ) {
    try database.write { db in
      if let current = try Self.product(hub: hub, sku: product.sku, in: db) {
        guard current.product != product else { return (current, false, nil) }
        try db.execute(
          """
          UPDATE products SET name = ?, price = ?, deposit = ?, unit_price = ?, version = version + 1,
            updated_at = ? WHERE hub = ? AND sku = ?
          """, product.name, product.price.minorUnits, product.deposit?.minorUnits,
          try product.unitPrice.map { String(decoding: try JSON.encode($0), as: UTF8.self) },
          clock.now().timeIntervalSince1970, hub, product.sku)
        let changed = try publishStockChanged(
          hub: hub, sku: product.sku, reason: "productChanged", correlationID, db)
        return (changed, false, StockMovement(hub: hub, sku: product.sku, version: changed.version))
      }
      try db.execute(
        """
        INSERT INTO products (hub, sku, name, currency, price, deposit, unit_price, on_hand, held, version, updated_at)
        VALUES (?, ?, ?, ?, ?, ?, ?, 0, 0, 1, ?)
        """, hub, product.sku, product.name, product.price.currency, product.price.minorUnits,
        product.deposit?.minorUnits,
        try product.unitPrice.map { String(decoding: try JSON.encode($0), as: UTF8.self) },
        clock.now().timeIntervalSince1970)
      let created = try publishStockChanged(
        hub: hub, sku: product.sku, reason: "productCreated", correlationID, db)
      return (created, true, StockMovement(hub: hub, sku: product.sku, version: created.version))
    }
  }

  /// Sets the on-hand count after a stock take (what is held stays held).
  public func setStock(hub: HubID, sku: SKU, onHand: Int, actor: String, correlationID: String?)
    throws(StockStoreError)
    -> (StockedProduct, StockMovement?)
  {
    try changeCount(hub: hub, sku: sku, reason: "stockTake", actor: actor, correlationID: correlationID) {
      _ in
      onHand
    }
  }

  /// Applies a signed adjustment to the on-hand count.
  public func adjustStock(
    hub: HubID, sku: SKU, adjustment: StockAdjustment, actor: String, correlationID: String?
  ) throws(StockStoreError) -> (StockedProduct, StockMovement?) {
    try changeCount(
      hub: hub, sku: sku, reason: adjustment.reason.rawValue, actor: actor, correlationID: correlationID
    ) { current throws(DomainError) in
      try adjustment.apply(to: current)
    }
  }

  private func changeCount(
    hub: HubID, sku: SKU, reason: String, actor: String, correlationID: String?,
    _ next: (Int) throws(DomainError) -> Int
  ) throws(StockStoreError) -> (StockedProduct, StockMovement?) {
    do {
      return try database.write { db in
        guard let row = try db.queryOne("SELECT on_hand FROM products WHERE hub = ? AND sku = ?", hub, sku)
        else { throw StockStoreError.domain(.unknownProduct(sku)) }
        let current = try row.int(0)
        let target: Int
        do throws(DomainError) { target = try next(current) } catch { throw StockStoreError.domain(error) }
        guard target != current else {
          return (try Self.product(hub: hub, sku: sku, in: db)!, nil)
        }
        try db.execute(
          "UPDATE products SET on_hand = ?, version = version + 1, updated_at = ? WHERE hub = ? AND sku = ?",
          target, clock.now().timeIntervalSince1970, hub, sku)
        try db.execute(
          "INSERT INTO stock_adjustments (hub, sku, delta, reason, actor, at) VALUES (?, ?, ?, ?, ?, ?)",
          hub, sku, target - current, reason, actor, clock.now().timeIntervalSince1970)
        let changed = try publishStockChanged(hub: hub, sku: sku, reason: reason, correlationID, db)
        return (changed, StockMovement(hub: hub, sku: sku, version: changed.version))
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
  public func reserve(_ request: ReservationRequest, correlationID: String?) throws -> (
    ReservationReply, [StockMovement]
  ) {
    // Malformed requests are answered before any database work.
    do { _ = try request.validate() } catch { return (.rejected(orderId: request.orderId, error), []) }
    let now = clock.now()
    return try database.write { db in
      guard try db.queryOne("SELECT 1 FROM hubs WHERE id = ?", request.hub) != nil else {
        return (.rejected(orderId: request.orderId, .unknownHub(request.hub)), [])
      }
      var movements = try releaseExpired(hub: request.hub, now: now, correlationID: correlationID, db)
      let row = try db.queryOne(
        "SELECT hub, lines, status, created_at, expires_at, release_reason FROM reservations WHERE order_id = ?",
        request.orderId)
      if let row, try row.optionalString(5) == ReleaseReason.outcomeFirst {
        // The order's outcome came first: this request is late, and nothing may be held for it.
        return (
          .rejected(orderId: request.orderId, .reservationReleased(orderId: request.orderId)), movements
        )
      }
      let existing = try row.map { row in
        Reservation(
          orderId: request.orderId, hub: try row.string(0),
          lines: try JSON.decode([ReservationLine].self, from: row.data(1)),
          state: Reservation.State(rawValue: try row.string(2)) ?? .released,
          createdAt: Date(timeIntervalSince1970: try row.double(3)),
          expiresAt: Date(timeIntervalSince1970: try row.double(4)))
      }
      var available: [SKU: Int] = [:]
      for line in request.lines {
        if let row = try db.queryOne(
          "SELECT on_hand - held FROM products WHERE hub = ? AND sku = ?", request.hub, line.sku)
        {
          available[line.sku] = max(0, try row.int(0))
        }
      }
      let decision = ReservationRules.decide(
        request, existing: existing, available: available, now: now, timeToLive: reservationTTL)
      guard case .hold(let reservation, _) = decision else { return (decision.reply, movements) }
      try db.execute(
        "INSERT INTO reservations (order_id, hub, lines, status, created_at, expires_at) VALUES (?, ?, ?, ?, ?, ?)",
        reservation.orderId, reservation.hub, Data(ReservationLine.jsonBytes(reservation.lines)),
        reservation.state.rawValue,
        reservation.createdAt.timeIntervalSince1970, reservation.expiresAt.timeIntervalSince1970)
      for line in reservation.lines {
        try db.execute(
          "INSERT INTO reservation_lines (order_id, sku, quantity) VALUES (?, ?, ?)",
          reservation.orderId, line.sku, line.quantity)
        if let movement = try moveHeld(
          hub: reservation.hub, sku: line.sku, by: line.quantity, reason: "reserved", correlationID, db)
        {
          movements.append(movement)
        }
      }
      return (decision.reply, movements)
    }
  }

  /// What applying an order outcome did, for the log.
  public enum OutcomeEffect: Equatable, Sendable {
    /// Committed or released as asked.
    case applied
    /// This event was applied before (a redelivery), or the reservation was already finished.
    case nothingToDo
    /// No reservation for the order: a decline or cancellation leaves a marker so a late
    /// reservation request for it holds nothing; a confirmation is only logged.
    case unknownOrder
    /// The order was confirmed after its hold had expired and was released: the goods are taken
    /// off on hand anyway (the order is paid), even if that leaves less than others expected.
    case confirmedAfterExpiry
  }

  /// Applies an order outcome once (the inbox keeps redeliveries from acting twice):
  /// `order.confirmed` commits the reservation, `order.declined`/`order.cancelled` release it.
  public func applyOrderOutcome(
    _ kind: OrderOutcome.Kind, orderId: String, hub: HubID?, messageID: String, consumer: String,
    correlationID: String?
  ) throws -> (movements: [StockMovement], effect: OutcomeEffect) {
    let now = clock.now()
    return try database.write { db in
      guard try Inbox.claim(messageID: messageID, consumer: consumer, at: now, in: db) else {
        return ([], .nothingToDo)
      }
      guard
        let row = try db.queryOne(
          "SELECT hub, status, release_reason FROM reservations WHERE order_id = ?", orderId)
      else {
        if kind != .confirmed {
          try db.execute(
            """
            INSERT INTO reservations (order_id, hub, lines, status, created_at, expires_at, finished_at, release_reason)
            VALUES (?, ?, '[]', 'released', ?, ?, ?, ?)
            """, orderId, hub ?? "", now.timeIntervalSince1970, now.timeIntervalSince1970,
            now.timeIntervalSince1970, ReleaseReason.outcomeFirst)
        }
        return ([], .unknownOrder)
      }
      let reservationHub = try row.string(0)
      let status = try row.string(1)
      if status == Reservation.State.held.rawValue {
        let committed = kind == .confirmed
        let movements = try finish(
          orderId: orderId, hub: reservationHub, as: committed ? .committed : .released,
          reason: committed ? "orderConfirmed" : (kind == .declined ? "orderDeclined" : "orderCancelled"),
          correlationID, db)
        return (movements, .applied)
      }
      if kind == .confirmed, status == Reservation.State.released.rawValue,
        try row.optionalString(2) == ReleaseReason.expired
      {
        let movements = try takeOffOnHand(orderId: orderId, hub: reservationHub, correlationID, db)
        return (movements, .confirmedAfterExpiry)
      }
      return ([], .nothingToDo)
    }
  }

  /// Forgets processed event ids older than `retention`: a redelivery comes within minutes,
  /// never days. Returns how many were removed.
  @discardableResult
  public func purgeInbox(retention: TimeInterval = 7 * 86_400) throws -> Int {
    let cutoff = clock.now().addingTimeInterval(-retention)
    return try database.write { db in try Inbox.purge(olderThan: cutoff, in: db) }
  }

  /// Releases every held reservation past its expiry; returns the counts that moved.
  public func releaseExpired() throws -> [StockMovement] {
    let now = clock.now()
    return try database.write { db in try releaseExpired(hub: nil, now: now, correlationID: nil, db) }
  }

  private func releaseExpired(hub: HubID?, now: Date, correlationID: String?, _ db: SQLiteConnection) throws
    -> [StockMovement]
  {
    let rows = try db.query(
      "SELECT order_id, hub FROM reservations WHERE status = 'held' AND expires_at <= ?"
        + (hub == nil ? "" : " AND hub = ?"),
      bindings: hub.map { [now.timeIntervalSince1970, $0] } ?? [now.timeIntervalSince1970])
    var movements: [StockMovement] = []
    for row in rows {
      movements += try finish(
        orderId: try row.string(0), hub: try row.string(1), as: .released, reason: ReleaseReason.expired,
        correlationID, db)
    }
    return movements
  }

  /// Why a reservation was released (the `release_reason` column).
  enum ReleaseReason {
    static let expired = "reservationExpired"
    /// A decline or cancellation arrived before any reservation request for the order.
    static let outcomeFirst = "outcomeBeforeReservation"
  }

  private func finish(
    orderId: String, hub: HubID, as state: Reservation.State, reason: String, _ correlationID: String?,
    _ db: SQLiteConnection
  ) throws -> [StockMovement] {
    try db.execute(
      "UPDATE reservations SET status = ?, finished_at = ?, release_reason = ? WHERE order_id = ?",
      state.rawValue,
      clock.now().timeIntervalSince1970, state == .released ? reason : nil, orderId)
    var movements: [StockMovement] = []
    for line in try db.query("SELECT sku, quantity FROM reservation_lines WHERE order_id = ?", orderId) {
      let sku = try line.string(0)
      let quantity = try line.int(1)
      let movement: StockMovement?
      if state == .committed {
        // The goods leave: on hand and held both go down; what is available does not move.
        movement = try takeGoods(
          hub: hub, sku: sku, quantity: quantity, heldToo: true, orderId: orderId, reason: reason,
          correlationID, db)
      } else {
        movement = try moveHeld(hub: hub, sku: sku, by: -quantity, reason: reason, correlationID, db)
      }
      if let movement { movements.append(movement) }
    }
    return movements
  }

  /// A confirmation after the hold expired: the paid goods leave on hand (never below 0).
  private func takeOffOnHand(orderId: String, hub: HubID, _ correlationID: String?, _ db: SQLiteConnection)
    throws -> [StockMovement]
  {
    try db.execute(
      "UPDATE reservations SET status = 'committed', finished_at = ?, release_reason = NULL WHERE order_id = ?",
      clock.now().timeIntervalSince1970, orderId)
    var movements: [StockMovement] = []
    for line in try db.query("SELECT sku, quantity FROM reservation_lines WHERE order_id = ?", orderId) {
      if let movement = try takeGoods(
        hub: hub, sku: try line.string(0), quantity: try line.int(1), heldToo: false, orderId: orderId,
        reason: "orderConfirmedLate", correlationID, db)
      {
        movements.append(movement)
      }
    }
    return movements
  }

  /// Takes a paid order's `quantity` off on hand (and off held, when it was still held), never
  /// below 0. When that moves what can be ordered (a confirmation after the hold expired, or an
  /// oversold shelf), the product's version rises and the new count is published; a normal
  /// commit, which takes as much off held as off on hand, leaves the available count, the
  /// version and every cache and cart as they were, so it publishes nothing (half of an order's
  /// stock events, for nothing a consumer could use). Nil when nothing was published.
  private func takeGoods(
    hub: HubID, sku: SKU, quantity: Int, heldToo: Bool, orderId: String, reason: String,
    _ correlationID: String?, _ db: SQLiteConnection
  ) throws -> StockMovement? {
    guard let row = try db.queryOne("SELECT on_hand, held FROM products WHERE hub = ? AND sku = ?", hub, sku)
    else { return nil }
    let (onHand, held) = (try row.int(0), try row.int(1))
    if onHand < quantity {
      logger.warning(
        "order takes more than is on hand",
        [
          "hub": hub, "sku": sku, "order.id": orderId, "stock.onHand": "\(onHand)",
          "order.quantity": "\(quantity)",
        ])
    }
    let newOnHand = max(0, onHand - quantity)
    let newHeld = max(0, held - (heldToo ? quantity : 0))
    let moves = max(0, newOnHand - newHeld) != max(0, onHand - held)
    try db.execute(
      """
      UPDATE products SET on_hand = ?, held = ?, version = version + ?, updated_at = ? WHERE hub = ? AND sku = ?
      """, newOnHand, newHeld, moves ? 1 : 0, clock.now().timeIntervalSince1970, hub, sku)
    guard moves else { return nil }
    return try publishStockChanged(hub: hub, sku: sku, reason: reason, correlationID, db).movement
  }

  /// Moves `quantity` into (or, negative, out of) what is held; nil when the product is gone.
  private func moveHeld(
    hub: HubID, sku: SKU, by quantity: Int, reason: String, _ correlationID: String?, _ db: SQLiteConnection
  ) throws -> StockMovement? {
    try db.execute(
      "UPDATE products SET held = MAX(0, held + ?), version = version + 1, updated_at = ? WHERE hub = ? AND sku = ?",
      quantity, clock.now().timeIntervalSince1970, hub, sku)
    guard db.changes > 0 else { return nil }
    return try publishStockChanged(hub: hub, sku: sku, reason: reason, correlationID, db).movement
  }

  // MARK: Demo

  /// Loads the demo assortment unless its hubs exist already. Returns whether it loaded.
  public func loadDemo(_ demo: DemoAssortment) throws -> Bool {
    if try !hubIDs().isDisjoint(with: demo.hubs.map(\.id)) { return false }
    for hub in demo.hubs { try upsertHub(hub, correlationID: "demo") }
    for hub in demo.hubs {
      try database.write { db in
        let now = clock.now().timeIntervalSince1970
        for product in demo.products {
          try db.execute(
            """
            INSERT INTO products (hub, sku, name, currency, price, deposit, unit_price, on_hand, held, version, updated_at)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?, 0, 1, ?)
            """, hub.id, product.sku, product.name, product.price.currency, product.price.minorUnits,
            product.deposit?.minorUnits,
            try product.unitPrice.map { String(decoding: try JSON.encode($0), as: UTF8.self) },
            demo.counts[hub.id]?[product.sku] ?? 0, now)
          _ = try publishStockChanged(hub: hub.id, sku: product.sku, reason: "demoLoaded", "demo", db)
        }
      }
    }
    return true
  }

  // MARK: Helpers

  private func publishStockChanged(
    hub: HubID, sku: SKU, reason: String, _ correlationID: String?, _ db: SQLiteConnection
  ) throws -> StockedProduct {
    guard let current = try Self.product(hub: hub, sku: sku, in: db) else {
      throw StockStoreError.domain(.unknownProduct(sku))
    }
    let event = StockChanged(hub: hub, product: current.product, available: current.available, reason: reason)
    try Outbox.append(
      event.message(
        id: ids.next(), occurredAt: clock.now(), correlationId: correlationID, version: current.version),
      in: db)
    return current
  }

  static let productColumns = "hub, sku, name, price, deposit, unit_price, on_hand - held, version, currency"

  static func product(hub: HubID, sku: SKU, in db: SQLiteConnection) throws -> StockedProduct? {
    try db.queryOne(
      "SELECT \(productColumns) FROM products WHERE hub = ? AND sku = ?", hub, sku
    ).map(stockedProduct)
  }

  static func stockedProduct(_ row: SQLRow) throws -> StockedProduct {
    let currency = try row.string(8)
    let product = Product(
      sku: try row.string(1), name: try row.string(2),
      price: Money(minorUnits: try row.int(3), currency: currency),
      deposit: try row.optionalInt(4).map { Money(minorUnits: $0, currency: currency) },
      unitPrice: try row.optionalString(5).map { try JSON.read(UnitPrice.self, from: Data($0.utf8)) })
    return StockedProduct(
      hub: try row.string(0), product: product, available: max(0, try row.int(6)), version: try row.int64(7))
  }
}

/// One page of a hub's products for the `stock.catalogue` request/reply.
public struct CataloguePage: Hashable, Sendable {
  public var products: [Versioned<StockChanged>]
  /// The last SKU of this page when another page follows; nil on the last page.
  public var next: SKU?
}

/// Why a store operation was refused: a rule (shown to the caller) or storage trouble (a 500/503).
public enum StockStoreError: Error {
  case domain(DomainError)
  case storage(any Error)
}
