import Foundation
import GrocerContracts
import GrocerCore
import GrocerStorage

/// StockService's storage: hubs, products, counts, reservations, the inbox and the
/// outbox. SQL only: the use cases (`StockCommands`) decide, and call the `in db` methods inside
/// the one transaction they open with `database.write` (or `writeLockingRows`, whose reads lock
/// through `lockClause`); the reads here open their own.
public final class StockStore: Sendable {
  public let database: any SQLDatabase

  public init(database: any SQLDatabase) {
    self.database = database
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
        rows = try db.query("SELECT sku, on_hand, held, version FROM products WHERE hub = ?", hub)
      } else {
        let placeholders = Array(repeating: "?", count: skus.count).joined(separator: ",")
        rows = try db.query(
          "SELECT sku, on_hand, held, version FROM products WHERE hub = ? AND sku IN (\(placeholders))",
          bindings: [hub] + skus)
      }
      return try rows.map {
        let level = StockLevel(onHand: try $0.int(1), held: try $0.int(2), version: try $0.int64(3))
        return StockRow(sku: try $0.string(0), count: level.available, sequence: level.version)
      }
    }
    let known = Set(found.map(\.sku))
    return found + skus.filter { !known.contains($0) }.map { StockRow(sku: $0, count: nil, sequence: 0) }
  }

  // MARK: Catalogue snapshot

  /// Every hub with its version, in id order.
  public func hubsWithVersions() throws -> [(hub: Hub, version: Int64)] {
    try database.read { db in
      try db.query("SELECT body, version FROM hubs ORDER BY id").map { row in
        (try JSON.decode(Hub.self, from: row.data(0)), try row.int64(1))
      }
    }
  }

  /// Up to `limit` of `hub`'s products in SKU order after `after`, read from one snapshot; nil
  /// when the hub does not exist.
  public func products(ofExistingHub hub: HubID, after: SKU?, limit: Int) throws -> [StockedProduct]? {
    try database.read { db in
      guard try hubExists(hub, in: db) else { return nil }
      return try db.query(
        "SELECT \(Self.productColumns) FROM products WHERE hub = ? AND sku > ? ORDER BY sku LIMIT ?",
        hub, after ?? "", limit
      ).map { try Self.stockedProduct($0) }
    }
  }

  // MARK: Hubs

  /// The hub as stored and its version.
  func hubRecord(_ id: HubID, in db: any SQLConnection) throws -> (hub: Hub, version: Int64)? {
    try db.queryOne("SELECT body, version FROM hubs WHERE id = ?", id).map { row in
      (try JSON.decode(Hub.self, from: row.data(0)), try row.int64(1))
    }
  }

  func hubExists(_ id: HubID, in db: any SQLConnection) throws -> Bool {
    try db.queryOne("SELECT 1 FROM hubs WHERE id = ?", id) != nil
  }

  func hubIDs(in db: any SQLConnection) throws -> Set<HubID> {
    Set(try db.query("SELECT id FROM hubs").map { try $0.string(0) })
  }

  /// Creates or replaces the hub's row at `version`.
  func saveHub(_ hub: Hub, version: Int64, at now: Date, in db: any SQLConnection) throws {
    try db.execute(
      """
      INSERT INTO hubs (id, body, version, updated_at) VALUES (?, ?, ?, ?)
      ON CONFLICT (id) DO UPDATE SET body = excluded.body, version = excluded.version,
        updated_at = excluded.updated_at
      """, hub.id, try JSON.encode(hub), version, now.timeIntervalSince1970)
  }

  // MARK: Products and counts

  /// A product with its on-hand and held counts and its version (locked in a locking write).
  func stock(hub: HubID, sku: SKU, in db: any SQLConnection) throws -> ProductStock? {
    try db.queryOne(
      "SELECT \(Self.productColumns) FROM products WHERE hub = ? AND sku = ?\(db.lockClause)", hub, sku
    ).map(Self.productStock)
  }

  /// The products of `skus` (ascending) that exist, with their counts and versions, locked in
  /// SKU order in a locking write (as one `stock` after another would lock them).
  func stocks(hub: HubID, skus: [SKU], in db: any SQLConnection) throws -> [SKU: ProductStock] {
    var stocks: [SKU: ProductStock] = [:]
    for run in SQLRuns.padded(skus.count, largest: 16) {
      let rows = try db.query(
        "SELECT \(Self.productColumns) FROM products WHERE hub = ? AND sku IN ("
          + Array(repeating: "?", count: run.count).joined(separator: ", ")
          + ") ORDER BY sku\(db.lockClause)",
        bindings: [hub] + run.map { skus[$0] as any SQLBindable })
      for row in rows {
        let stock = try Self.productStock(row)
        stocks[stock.product.sku] = stock
      }
    }
    return stocks
  }

  /// Inserts a new product with its counts and version.
  func insertProduct(_ stock: ProductStock, at now: Date, in db: any SQLConnection) throws {
    let product = stock.product
    try db.execute(
      """
      INSERT INTO products (hub, sku, name, currency, price, deposit, unit_price, on_hand, held, version, updated_at,
        original_price, brand, category, image)
      VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
      """, stock.hub, product.sku, product.name, product.price.currency, product.price.minorUnits,
      product.deposit?.minorUnits, try Self.text(product.unitPrice),
      stock.level.onHand, stock.level.held, stock.level.version, now.timeIntervalSince1970,
      product.originalPrice?.minorUnits, product.brand, product.category, try Self.text(product.image))
  }

  /// Stores a product's catalogue fields and version (its counts stay).
  func updateCatalogueFields(_ stock: ProductStock, at now: Date, in db: any SQLConnection) throws {
    let product = stock.product
    try db.execute(
      """
      UPDATE products SET name = ?, price = ?, deposit = ?, unit_price = ?, version = ?,
        updated_at = ?, original_price = ?, brand = ?, category = ?, image = ? WHERE hub = ? AND sku = ?
      """, product.name, product.price.minorUnits, product.deposit?.minorUnits,
      try Self.text(product.unitPrice),
      stock.level.version, now.timeIntervalSince1970, product.originalPrice?.minorUnits, product.brand,
      product.category, try Self.text(product.image), stock.hub, product.sku)
  }

  /// Stores the counts of several products of `hub` (a reservation's lines) in one statement
  /// per run of rows: a round trip each was most of what an order's hold cost PostgreSQL, and
  /// the rows stay locked meanwhile. A `VALUES` list names its columns `column1…` in both engines.
  /// A SKU given twice is stored as its last level (an UPDATE takes one of the rows it matches);
  /// a run is filled up with copies of its last row (`SQLRuns.padded`), which change nothing more.
  func saveLevels(
    _ levels: [(sku: SKU, level: StockLevel)], hub: HubID, at now: Date, in db: any SQLConnection
  )
    throws
  {
    let levels = Dictionary(levels, uniquingKeysWith: { _, last in last }).sorted { $0.key < $1.key }
    let at = now.timeIntervalSince1970
    for run in SQLRuns.padded(levels.count, largest: 16) {
      try db.execute(
        """
        UPDATE products SET on_hand = v.column2, held = v.column3, version = v.column4, updated_at = ?
        FROM (VALUES \(Array(repeating: "(?, ?, ?, ?)", count: run.count).joined(separator: ", "))) AS v
        WHERE products.hub = ? AND products.sku = v.column1
        """,
        bindings: [at as any SQLBindable]
          + run.flatMap { index -> [any SQLBindable] in
            let (sku, level) = levels[index]
            return [sku, level.onHand, level.held, level.version]
          } + [hub])
    }
  }

  /// Appends a staff count change to the audit trail.
  func recordAdjustment(
    hub: HubID, sku: SKU, delta: Int, reason: String, actor: String, at now: Date, in db: any SQLConnection
  ) throws {
    try db.execute(
      "INSERT INTO stock_adjustments (hub, sku, delta, reason, actor, at) VALUES (?, ?, ?, ?, ?, ?)",
      hub, sku, delta, reason, actor, now.timeIntervalSince1970)
  }

  // MARK: Reservations

  /// The reservation stored under `orderId` with why it was released (a marker left by an
  /// outcome that came first has no lines and may have no hub). Locked in a locking write.
  func reservation(_ orderId: String, in db: any SQLConnection) throws -> (
    reservation: Reservation, releaseReason: String?
  )? {
    try db.queryOne(
      """
      SELECT hub, lines, status, created_at, expires_at, release_reason FROM reservations
      WHERE order_id = ?\(db.lockClause)
      """, orderId
    ).map { row in
      let releaseReason = try row.optionalString(5)
      let reservation = Reservation(
        orderId: orderId, hub: try row.string(0),
        lines: try JSON.decode([ReservationLine].self, from: row.data(1)),
        state: Reservation.State(rawValue: try row.string(2)) ?? .released,
        createdAt: Date(timeIntervalSince1970: try row.double(3)),
        expiresAt: Date(timeIntervalSince1970: try row.double(4)))
      return (reservation, releaseReason)
    }
  }

  /// The hub, state, release reason and lines of the reservation under `orderId` (locked in a
  /// locking write).
  func reservationStatus(_ orderId: String, in db: any SQLConnection) throws -> ReservationStatus? {
    try db.queryOne(
      "SELECT hub, status, release_reason, lines FROM reservations WHERE order_id = ?\(db.lockClause)",
      orderId
    ).map {
      ReservationStatus(
        hub: try $0.string(0), state: Reservation.State(rawValue: try $0.string(1)) ?? .released,
        releaseReason: try $0.optionalString(2), lines: try Self.lines($0.data(3)))
    }
  }

  /// A reservation's stored lines in SKU order (the order a locking write locks products in).
  private static func lines(_ json: Data) throws -> [ReservationLine] {
    try JSON.decode([ReservationLine].self, from: json).sorted { $0.sku < $1.sku }
  }

  /// Stores a new reservation with its lines (as JSON in its row: only ever read with it).
  func insertReservation(_ reservation: Reservation, in db: any SQLConnection) throws {
    try db.execute(
      "INSERT INTO reservations (order_id, hub, lines, status, created_at, expires_at) VALUES (?, ?, ?, ?, ?, ?)",
      reservation.orderId, reservation.hub, Data(ReservationLine.jsonBytes(reservation.lines)),
      reservation.state.rawValue,
      reservation.createdAt.timeIntervalSince1970, reservation.expiresAt.timeIntervalSince1970)
  }

  /// Stores a released reservation without lines, finished at `now`.
  func insertReleasedMarker(
    orderId: String, hub: HubID, reason: String, at now: Date, in db: any SQLConnection
  ) throws {
    try db.execute(
      """
      INSERT INTO reservations (order_id, hub, lines, status, created_at, expires_at, finished_at, release_reason)
      VALUES (?, ?, '[]', 'released', ?, ?, ?, ?)
      """, orderId, hub, now.timeIntervalSince1970, now.timeIntervalSince1970,
      now.timeIntervalSince1970, reason)
  }

  /// Stores a reservation's final state, when it was reached and why it was released.
  func finishReservation(
    _ orderId: String, as state: Reservation.State, releaseReason: String?, at now: Date,
    in db: any SQLConnection
  ) throws {
    try db.execute(
      "UPDATE reservations SET status = ?, finished_at = ?, release_reason = ? WHERE order_id = ?",
      state.rawValue, now.timeIntervalSince1970, releaseReason, orderId)
  }

  /// Held reservations whose `expiresAt` is not after `now` (`Reservation.isHolding` is false for
  /// them), at `hub` or everywhere, in order id order (locked in a locking write: one that
  /// waited for another's release of the same hold skips it).
  func heldReservations(expiredAt now: Date, hub: HubID?, in db: any SQLConnection) throws -> [(
    orderId: String, hub: HubID, lines: [ReservationLine]
  )] {
    try db.query(
      "SELECT order_id, hub, lines FROM reservations WHERE status = 'held' AND expires_at <= ?"
        + (hub == nil ? "" : " AND hub = ?") + " ORDER BY order_id\(db.lockClause)",
      bindings: hub.map { [now.timeIntervalSince1970, $0] } ?? [now.timeIntervalSince1970]
    ).map { (try $0.string(0), try $0.string(1), try Self.lines($0.data(2))) }
  }

  // MARK: Inbox and outbox

  /// Records `messageID` as processed by `consumer`; false when it was already.
  func claim(messageID: String, consumer: String, at now: Date, in db: any SQLConnection) throws -> Bool {
    try Inbox.claim(messageID: messageID, consumer: consumer, at: now, in: db)
  }

  /// Forgets processed event ids older than `cutoff`. Returns how many were removed.
  func purgeInbox(olderThan cutoff: Date) throws -> Int {
    try database.write { db in try Inbox.purge(olderThan: cutoff, in: db) }
  }

  func append(_ message: OutgoingMessage, in db: any SQLConnection) throws {
    try Outbox.append(message, in: db)
  }

  func append(contentsOf messages: [OutgoingMessage], in db: any SQLConnection) throws {
    try Outbox.append(contentsOf: messages, in: db)
  }

  static let productColumns =
    "hub, sku, name, price, deposit, unit_price, on_hand, held, version, currency, original_price, brand, category, image"

  /// A JSON column's text (nil stays NULL).
  static func text<T: Encodable>(_ value: T?) throws -> String? {
    try value.map { String(decoding: try JSON.encode($0), as: UTF8.self) }
  }

  static func product(hub: HubID, sku: SKU, in db: any SQLConnection) throws -> StockedProduct? {
    try db.queryOne(
      "SELECT \(productColumns) FROM products WHERE hub = ? AND sku = ?", hub, sku
    ).map(stockedProduct)
  }

  static func stockedProduct(_ row: SQLRow) throws -> StockedProduct { try productStock(row).stocked }

  static func productStock(_ row: SQLRow) throws -> ProductStock {
    let currency = try row.string(9)
    let product = Product(
      sku: try row.string(1), name: try row.string(2),
      price: Money(minorUnits: try row.int(3), currency: currency),
      deposit: try row.optionalInt(4).map { Money(minorUnits: $0, currency: currency) },
      unitPrice: try row.optionalString(5).map { try JSON.read(UnitPrice.self, from: Data($0.utf8)) },
      originalPrice: try row.optionalInt(10).map { Money(minorUnits: $0, currency: currency) },
      brand: try row.optionalString(11), category: try row.optionalString(12),
      image: try row.optionalString(13).map { try JSON.decode(ProductImage.self, from: Data($0.utf8)) })
    return ProductStock(
      hub: try row.string(0), product: product,
      level: StockLevel(onHand: try row.int(6), held: try row.int(7), version: try row.int64(8)))
  }
}
