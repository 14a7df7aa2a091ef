import Foundation
import GrocerContracts
import GrocerCore
import GrocerStorage
import Synchronization

/// CartService's SQLite storage: the catalogue copy, carts with their lines and adjustments,
/// promotions, the inbox and the outbox. SQL only: the use cases (`CartCommands`) decide, and
/// call these inside the one transaction they open with `database.write`.
///
/// Writes run on the single writer, which is what serializes the writes to one cart.
public final class CartStore: Sendable {
  public let database: any SQLDatabase
  /// Decoded hubs and promotions by the version last read, so a reply decodes neither.
  private let hubCache = Mutex<[HubID: (version: Int64, hub: HubChanged)]>([:])
  private let promoCache = Mutex<[String: (version: Int64, promo: Promotion)]>([:])

  public init(database: any SQLDatabase) {
    self.database = database
  }

  /// A cart's row.
  struct CartRow {
    var user: String
    var hub: HubID
    var version: Int64
    var promo: String?
    var checkoutVersion: Int64?
    var checkoutAt: Double?
  }

  // MARK: - Catalogue copy

  /// Whether the catalogue copy was ever filled from StockService (or needs no filling because
  /// events already brought hubs).
  public func catalogueSynced() throws -> Bool {
    try database.read { db in try catalogueSynced(in: db) }
  }

  func catalogueSynced(in db: any SQLConnection) throws -> Bool {
    try db.queryOne("SELECT 1 FROM catalogue_sync WHERE id = 1") != nil
  }

  func markCatalogueSynced(at now: Date, in db: any SQLConnection) throws {
    try db.execute(
      "INSERT INTO catalogue_sync (id, completed_at) VALUES (1, ?) ON CONFLICT (id) DO UPDATE SET completed_at = excluded.completed_at",
      now.timeIntervalSince1970)
  }

  public func hubIDs() throws -> [HubID] {
    try database.read { db in try db.query("SELECT id FROM hubs ORDER BY id").map { try $0.string(0) } }
  }

  /// The hub as the copy holds it; nil when the copy does not know it.
  func hub(_ id: HubID, in db: any SQLConnection) throws -> HubChanged? {
    // The version alone first: the body is read and decoded only when it changed.
    guard let row = try db.queryOne("SELECT version FROM hubs WHERE id = ?", id) else { return nil }
    let version = try row.int64(0)
    if let cached = hubCache.withLock({ $0[id] }), cached.version == version { return cached.hub }
    guard let body = try db.queryOne("SELECT body FROM hubs WHERE id = ?", id) else { return nil }
    let hub = try JSON.decode(HubChanged.self, from: body.data(0))
    hubCache.withLock { $0[id] = (version, hub) }
    return hub
  }

  /// The version of the hub last read by `hub(_:in:)`, without reading the database.
  func cachedVersion(ofHub id: HubID) -> Int64? {
    hubCache.withLock { $0[id]?.version }
  }

  /// The hub as the copy holds it, with its version.
  func storedHub(_ id: HubID, in db: any SQLConnection) throws -> (version: Int64, hub: HubChanged)? {
    try db.queryOne("SELECT version, body FROM hubs WHERE id = ?", id).map {
      (try $0.int64(0), try JSON.decode(HubChanged.self, from: $0.data(1)))
    }
  }

  func saveHub(_ hub: HubChanged, version: Int64, in db: any SQLConnection) throws {
    try db.execute(
      """
      INSERT INTO hubs (id, body, version) VALUES (?, ?, ?)
      ON CONFLICT (id) DO UPDATE SET body = excluded.body, version = excluded.version
      """, hub.hub, try Self.jsonText(hub), version)
  }

  func product(hub: HubID, sku: SKU, in db: any SQLConnection) throws -> CatalogueProduct? {
    try db.queryOne(Self.productSelect, hub, sku).map(Self.catalogueProduct)
  }

  private static let productSelect =
    "SELECT name, currency, price, deposit, available, version FROM products WHERE hub = ? AND sku = ?"

  private static func catalogueProduct(_ row: SQLRow) throws -> CatalogueProduct {
    CatalogueProduct(
      name: try row.string(0), currency: try row.string(1), price: try row.int(2),
      deposit: try row.optionalInt(3), available: try row.int(4), version: try row.int64(5))
  }

  /// Stores `event` at `version` as the product's copy when the copy is older or missing
  /// (`StockChange.isNewer`), and returns the copy as it was before. PostgreSQL reads and writes
  /// in one statement (its CTEs all see the snapshot from before the write): a round trip each
  /// for every `stock.changed` was a seventh of an order's statements in this database.
  func replaceProduct(_ event: StockChanged, version: Int64, in db: any SQLConnection) throws
    -> CatalogueProduct?
  {
    let upsert = """
      INSERT INTO products (hub, sku, name, currency, price, deposit, available, version)
      VALUES (?, ?, ?, ?, ?, ?, ?, ?)
      ON CONFLICT (hub, sku) DO UPDATE SET name = excluded.name, currency = excluded.currency,
        price = excluded.price, deposit = excluded.deposit, available = excluded.available, version = excluded.version
      WHERE products.version < excluded.version
      """
    let values: [any SQLBindable] = [
      event.hub, event.sku, event.name, event.price.currency, event.price.minorUnits,
      event.deposit?.minorUnits,
      event.available, version,
    ]
    guard db.dialect == .postgresql else {
      let old = try product(hub: event.hub, sku: event.sku, in: db)
      try db.execute(upsert, bindings: values)
      return old
    }
    return try db.queryOne(
      """
      WITH old AS (\(Self.productSelect)), saved AS (\(upsert))
      SELECT name, currency, price, deposit, available, version FROM old
      """, bindings: [event.hub, event.sku] + values
    ).map(Self.catalogueProduct)
  }

  // MARK: - Promotions

  public func promotion(_ code: String) throws -> Promotion? {
    try database.read { db in try self.promotion(code, in: db) }
  }

  func promotion(_ code: String, in db: any SQLConnection) throws -> Promotion? {
    guard let row = try db.queryOne("SELECT version, body FROM promos WHERE code = ?", code) else {
      return nil
    }
    let version = try row.int64(0)
    if let cached = promoCache.withLock({ $0[code] }), cached.version == version { return cached.promo }
    let promo = try JSON.decode(Promotion.self, from: row.data(1))
    promoCache.withLock { $0[code] = (version, promo) }
    return promo
  }

  /// The stored body of promotion `code`, as `promotionBody(_:)` writes it.
  func storedPromotionBody(_ code: String, in db: any SQLConnection) throws -> String? {
    try db.queryOne("SELECT body, version FROM promos WHERE code = ?", code).map { try $0.string(0) }
  }

  static func promotionBody(_ promo: Promotion) throws -> String { try jsonText(promo) }

  func savePromotion(_ promo: Promotion, body: String, in db: any SQLConnection) throws {
    try db.execute(
      """
      INSERT INTO promos (code, body, valid_until, version) VALUES (?, ?, ?, 1)
      ON CONFLICT (code) DO UPDATE SET body = excluded.body, valid_until = excluded.valid_until,
        version = promos.version + 1
      """, promo.code, body, promo.validUntil?.timeIntervalSince1970)
  }

  func promotionExists(_ code: String, in db: any SQLConnection) throws -> Bool {
    try db.queryOne("SELECT 1 FROM promos WHERE code = ?", code) != nil
  }

  func deletePromotion(_ code: String, in db: any SQLConnection) throws {
    try db.execute("DELETE FROM promos WHERE code = ?", code)
  }

  /// The codes held by some cart whose promotion ran out at `now`.
  func expiredCodesInCarts(at now: Date, in db: any SQLConnection) throws -> [String] {
    try db.query(
      """
      SELECT DISTINCT p.code FROM promos p JOIN carts c ON c.promo_code = p.code
      WHERE p.valid_until IS NOT NULL AND p.valid_until <= ?
      """, now.timeIntervalSince1970
    ).map { try $0.string(0) }
  }

  // MARK: - Carts

  func cart(user: String, hub: HubID, in db: any SQLConnection) throws -> CartRow? {
    try db.queryOne(
      "SELECT version, promo_code, checkout_version, checkout_at FROM carts WHERE user_id = ? AND hub = ?",
      user, hub
    ).map {
      CartRow(
        user: user, hub: hub, version: try $0.int64(0), promo: try $0.optionalString(1),
        checkoutVersion: try $0.optionalInt64(2), checkoutAt: try $0.optionalDouble(3))
    }
  }

  func carts(holdingPromo code: String, in db: any SQLConnection) throws -> [CartRow] {
    try db.query("SELECT user_id, hub, version FROM carts WHERE promo_code = ?", code).map {
      CartRow(user: try $0.string(0), hub: try $0.string(1), version: try $0.int64(2), promo: code)
    }
  }

  /// The carts at `hub` with at least one line.
  func nonEmptyCarts(hub: HubID, in db: any SQLConnection) throws -> [CartRow] {
    try db.query(
      """
      SELECT c.user_id, c.version, c.promo_code FROM carts c
      WHERE c.hub = ? AND EXISTS (SELECT 1 FROM cart_lines l WHERE l.user_id = c.user_id AND l.hub = c.hub)
      """, hub
    ).map {
      CartRow(user: try $0.string(0), hub: hub, version: try $0.int64(1), promo: try $0.optionalString(2))
    }
  }

  /// The carts at `hub` holding more than `above` of `sku`: user, promo code and the line.
  func holders(hub: HubID, sku: SKU, above: Int, in db: any SQLConnection) throws -> [(
    user: String, promo: String?, holder: StockChange.Holder
  )] {
    try db.query(
      """
      SELECT l.user_id, l.quantity, c.version, c.promo_code, c.checkout_version, c.checkout_at
      FROM cart_lines l JOIN carts c ON c.user_id = l.user_id AND c.hub = l.hub
      WHERE l.hub = ? AND l.sku = ? AND l.quantity > ?
      """, hub, sku, above
    ).map { row in
      (
        try row.string(0), try row.optionalString(3),
        StockChange.Holder(
          quantity: try row.int(1), version: try row.int64(2), checkoutVersion: try row.optionalInt64(4),
          checkoutAt: try row.optionalDouble(5))
      )
    }
  }

  func markCheckout(user: String, hub: HubID, version: Int64, at now: Date, in db: any SQLConnection) throws {
    try db.execute(
      "UPDATE carts SET checkout_version = ?, checkout_at = ? WHERE user_id = ? AND hub = ?",
      version, now.timeIntervalSince1970, user, hub)
  }

  /// Writes the cart's new version (creating the row) and drops the adjustments recorded at
  /// `droppingThrough` or before.
  func saveVersion(
    _ version: Int64, user: String, hub: HubID, promo: String?, at now: Date, droppingThrough: Int64?,
    in db: any SQLConnection
  ) throws {
    try db.execute(
      """
      INSERT INTO carts (user_id, hub, version, promo_code, updated_at) VALUES (?, ?, ?, ?, ?)
      ON CONFLICT (user_id, hub) DO UPDATE SET version = excluded.version, promo_code = excluded.promo_code,
        updated_at = excluded.updated_at
      """, user, hub, version, promo, now.timeIntervalSince1970)
    if let droppingThrough {
      try db.execute(
        "DELETE FROM cart_adjustments WHERE user_id = ? AND hub = ? AND version <= ?", user, hub,
        droppingThrough)
    }
  }

  // MARK: - Lines

  func lineQuantity(user: String, hub: HubID, sku: SKU, in db: any SQLConnection) throws -> Int {
    try db.queryOne(
      "SELECT quantity FROM cart_lines WHERE user_id = ? AND hub = ? AND sku = ?", user, hub, sku
    )?.int(0) ?? 0
  }

  /// The cart's version and promotion, and whether it holds a line, in one statement (what an
  /// order's confirmation asks of every cart).
  func cartHoldingLines(user: String, hub: HubID, in db: any SQLConnection) throws -> (
    cart: CartRow, hasLines: Bool
  )? {
    try db.queryOne(
      """
      SELECT c.version, c.promo_code,
        EXISTS (SELECT 1 FROM cart_lines l WHERE l.user_id = c.user_id AND l.hub = c.hub)
      FROM carts c WHERE c.user_id = ? AND c.hub = ?
      """, user, hub
    ).map {
      (
        CartRow(user: user, hub: hub, version: try $0.int64(0), promo: try $0.optionalString(1)),
        try $0.bool(2)
      )
    }
  }

  /// The cart's lines as `cart.changed` lists them, in the order they were added.
  func lineQuantities(user: String, hub: HubID, in db: any SQLConnection) throws -> [CartChanged.Line] {
    try db.query(
      "SELECT sku, quantity FROM cart_lines WHERE user_id = ? AND hub = ? ORDER BY position", user, hub
    ).map { CartChanged.Line(sku: try $0.string(0), quantity: try $0.int(1)) }
  }

  /// The cart's lines with their products as the copy has them now, in the order they were added.
  func pricedLines(user: String, hub: HubID, in db: any SQLConnection) throws -> [CartPricing.Line] {
    try db.query(
      """
      SELECT l.sku, p.name, l.quantity, p.price, p.deposit, p.currency
      FROM cart_lines l JOIN products p ON p.hub = l.hub AND p.sku = l.sku
      WHERE l.user_id = ? AND l.hub = ? ORDER BY l.position
      """, user, hub
    ).map { row in
      let currency = try row.string(5)
      return CartPricing.Line(
        sku: try row.string(0), name: try row.string(1), quantity: try row.int(2),
        unitPrice: Money(minorUnits: try row.int(3), currency: currency),
        deposit: try row.optionalInt(4).map { Money(minorUnits: $0, currency: currency) })
    }
  }

  /// Sets a line's quantity (0 deletes it); a new line goes after the others.
  /// A new line's position is the cart version that added it, so lines keep the order they were
  /// added in (versions only rise) without scanning the cart.
  func setLine(
    user: String, hub: HubID, sku: SKU, quantity: Int, version: Int64, in db: any SQLConnection
  ) throws {
    if quantity == 0 {
      try db.execute("DELETE FROM cart_lines WHERE user_id = ? AND hub = ? AND sku = ?", user, hub, sku)
      return
    }
    try db.execute(
      """
      INSERT INTO cart_lines (user_id, hub, sku, quantity, position) VALUES (?, ?, ?, ?, ?)
      ON CONFLICT (user_id, hub, sku) DO UPDATE SET quantity = excluded.quantity
      """, user, hub, sku, quantity, version)
  }

  /// Deletes every line and adjustment of the cart.
  func empty(user: String, hub: HubID, in db: any SQLConnection) throws {
    try db.executeTogether([
      ("DELETE FROM cart_lines WHERE user_id = ? AND hub = ?", [user, hub]),
      ("DELETE FROM cart_adjustments WHERE user_id = ? AND hub = ?", [user, hub]),
    ])
  }

  // MARK: - Adjustments

  /// Every adjustment kept for the cart, oldest first.
  func adjustments(user: String, hub: HubID, in db: any SQLConnection) throws -> [CartAdjustment] {
    try db.query(
      """
      SELECT version, kind, sku, quantity, from_units, to_units, currency, code FROM cart_adjustments
      WHERE user_id = ? AND hub = ? ORDER BY version, seq
      """, user, hub
    ).compactMap { try Self.adjustment($0) }
  }

  /// The newest adjustment kept for `sku` in this cart.
  func lastAdjustment(user: String, hub: HubID, sku: SKU, in db: any SQLConnection) throws
    -> CartAdjustment.Change?
  {
    try db.queryOne(
      """
      SELECT version, kind, sku, quantity, from_units, to_units, currency, code FROM cart_adjustments
      WHERE user_id = ? AND hub = ? AND sku = ? ORDER BY version DESC, seq DESC LIMIT 1
      """, user, hub, sku
    ).flatMap { try Self.adjustment($0)?.change }
  }

  func record(
    _ changes: [CartAdjustment.Change], user: String, hub: HubID, version: Int64, in db: any SQLConnection
  ) throws {
    for (seq, change) in changes.enumerated() {
      var sku: String?
      var quantity: Int?
      var from: Int?
      var to: Int?
      var currency: String?
      var code: String?
      switch change {
      case .outOfStock(let value): sku = value
      case .reduced(let value, let count):
        sku = value
        quantity = count
      case .priceChanged(let value, let old, let new):
        sku = value
        from = old.minorUnits
        to = new.minorUnits
        currency = new.currency
      case .promoRemoved(let value): code = value
      }
      try db.execute(
        """
        INSERT INTO cart_adjustments (user_id, hub, version, seq, kind, sku, quantity, from_units, to_units, currency, code)
        VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
        """, user, hub, version, seq, CartAdjustment(change, version: version).kind, sku, quantity, from, to,
        currency, code)
    }
  }

  private static func adjustment(_ row: SQLRow) throws -> CartAdjustment? {
    let version = try row.int64(0)
    let sku = try row.optionalString(2) ?? ""
    let change: CartAdjustment.Change
    switch try row.string(1) {
    case "outOfStock": change = .outOfStock(sku: sku)
    case "reduced": change = .reduced(sku: sku, to: try row.optionalInt(3) ?? 0)
    case "priceChanged":
      let currency = try row.optionalString(6) ?? ""
      change = .priceChanged(
        sku: sku, from: Money(minorUnits: try row.optionalInt(4) ?? 0, currency: currency),
        to: Money(minorUnits: try row.optionalInt(5) ?? 0, currency: currency))
    case "promoRemoved": change = .promoRemoved(code: try row.optionalString(7) ?? "")
    default: return nil
    }
    return CartAdjustment(change, version: version)
  }

  // MARK: - Inbox and outbox

  /// Claims a consumed message for `consumer`; false when it was processed already.
  func claim(messageID: String, consumer: String, at now: Date, in db: any SQLConnection) throws -> Bool {
    try Inbox.claim(messageID: messageID, consumer: consumer, at: now, in: db)
  }

  /// Forgets inbox entries processed before `cutoff`.
  func purgeInbox(olderThan cutoff: Date) throws -> Int {
    try database.write { db in try Inbox.purge(olderThan: cutoff, in: db) }
  }

  func append(_ event: OutgoingMessage, in db: any SQLConnection) throws {
    try Outbox.append(event, in: db)
  }

  private static func jsonText(_ value: some Encodable) throws -> String {
    String(decoding: try JSON.encode(value), as: UTF8.self)
  }
}
