import Foundation
import GrocerContracts
import GrocerCore
import GrocerStorage
import Synchronization

/// CartService's SQLite storage: the catalogue copy, carts with their lines and adjustments,
/// and promotions.
///
/// Every write runs in one transaction on the single writer, which is what serializes the
/// writes to one cart: a cart's `version` is read and raised inside the transaction that changes
/// it, and its `cart.changed` event (when those are published) goes to the outbox in the same
/// transaction. The reply is rendered inside that transaction too, so it shows exactly the
/// version it created. Writes queued on the writer queue (the HTTP path) commit in groups, each
/// in its own savepoint.
public final class CartStore: Sendable {
  public let database: SQLiteDatabase
  private let clock: any WallClock
  private let ids: any IDGenerator
  /// How long a cart in checkout keeps what a reservation took from the counts (see
  /// `applyProduct`).
  private let checkoutHold: TimeInterval
  /// Whether each new version puts `cart.changed` in the outbox.
  private let publishesChanges: Bool
  /// Decoded hubs and promotions by the version last read, so a reply decodes neither.
  private let hubCache = Mutex<[HubID: (version: Int64, hub: HubChanged)]>([:])
  private let promoCache = Mutex<[String: (version: Int64, promo: Promotion)]>([:])
  /// Each hub's open/closed status with the moment it next changes (computing it walks the week
  /// with a calendar, too slow for every reply).
  private let hoursCache = Mutex<[HubID: (version: Int64, status: HoursStatus, until: Date)]>([:])
  /// Replies in memory for the HTTP fast path; told about every committed change.
  public let replies: CartReplyCache
  /// What the running write changed, told to `replies` once it is committed.
  private let announcements = Mutex<[Announcement]>([])

  enum Announcement {
    case cart(user: String, hub: HubID, version: Int64)
    case hub(HubID)
  }

  public init(
    database: SQLiteDatabase, clock: any WallClock, ids: any IDGenerator,
    checkoutHold: TimeInterval = 15 * 60, publishesChanges: Bool = false,
    replies: CartReplyCache = CartReplyCache()
  ) {
    self.replies = replies
    self.publishesChanges = publishesChanges
    self.database = database
    self.clock = clock
    self.ids = ids
    self.checkoutHold = checkoutHold
  }

  // MARK: - Carts

  /// The whole priced cart of `user` at `hub`, with the adjustments newer than `seenVersion`
  /// (all kept ones when nil). A user without a cart there gets an empty one at version 0.
  public func cart(user: String, hub: HubID, seenVersion: Int64?) throws -> CartView {
    let ticket = replies.ticket(hub: hub)
    let rendered = try database.read { db in
      let hubValue = try self.requireHub(hub, in: db)
      return try self.render(user: user, hub: hubValue, in: db)
    }
    replies.remember(rendered.view, user: user, freshUntil: rendered.freshUntil, ticket: ticket)
    return rendered.view.since(seenVersion)
  }

  /// Sets the quantity of `sku` (0 removes it), clamped to what the hub has. A request that
  /// leaves the cart as it is (the same quantity, the same clamp as last time) changes nothing.
  public func setQuantity(
    user: String, hub: HubID, sku: SKU, quantity: Int, seenVersion: Int64?, correlationID: String?
  ) throws -> CartView {
    try QuantityChange.validate(quantity)
    return try write { db in
      let ticket = self.replies.ticket(hub: hub)
      let hubValue = try self.requireHub(hub, in: db)
      guard let product = try self.product(hub: hub, sku: sku, in: db) else {
        throw CartError.unknownProduct(sku)
      }
      let cart = try self.cartRow(user: user, hub: hub, in: db)
      let request = QuantityChange(
        sku: sku, requested: quantity, available: product.available,
        held: try self.lineQuantity(user: user, hub: hub, sku: sku, in: db))
      let last =
        request.needsLastAdjustment ? try self.lastChange(user: user, hub: hub, sku: sku, in: db) : nil
      let unchanged = !request.changesCart(lastAdjustment: last)
      let promo = try cart?.promo.flatMap { try self.promotion($0, in: db) }
      // The remembered reply of the current version, when there is one, stands in for reading
      // every line again (exact: see `CartReplyCache.view`).
      let base = self.replies.view(user: user, hub: hub, version: cart?.version ?? 0)
      let rendered: Rendered
      if unchanged {
        rendered =
          try base.map {
            self.priced(
              hub: hubValue, version: $0.version, lines: $0.lines.map(CartPricing.Line.init),
              adjustments: $0.adjustments, promo: promo)
          } ?? self.render(user: user, hub: hubValue, in: db)
      } else {
        let version = (cart?.version ?? 0) + 1
        try self.setLine(user: user, hub: hub, sku: sku, quantity: request.quantity, version: version, in: db)
        if let change = request.adjustment {
          try self.record([change], user: user, hub: hub, version: version, in: db)
        }
        // Rendered as the new version before it is saved, so the event reuses its lines.
        if let base {
          let lines = request.lines(base.lines.map(CartPricing.Line.init), product: product)
          let adjustments =
            AdjustmentWindow.kept(base.adjustments, at: version) + request.adjustments(at: version)
          rendered = self.priced(
            hub: hubValue, version: version, lines: lines, adjustments: adjustments, promo: promo)
        } else {
          rendered = try self.render(
            user: user, hub: hubValue, in: db,
            as: CartRow(user: user, hub: hub, version: version, promo: cart?.promo))
        }
        try self.saveVersion(
          version, user: user, hub: hub, promo: cart?.promo, reason: "customer", correlationID: correlationID,
          lines: rendered.view.lines.map { CartChanged.Line(sku: $0.sku, quantity: $0.quantity) }, in: db)
      }
      self.database.afterCommit { [replies] in
        replies.remember(rendered.view, user: user, freshUntil: rendered.freshUntil, ticket: ticket)
      }
      return rendered.view.since(seenVersion)
    }
  }

  /// Puts promo `code` on the cart (nil removes it). Unknown → `unknownPromotion`; expired or not
  /// valid at this hub → refused; a minimum subtotal not reached yet → kept with a notice.
  public func setPromo(
    user: String, hub: HubID, code: String?, seenVersion: Int64?, correlationID: String?
  ) throws -> CartView {
    let now = clock.now()
    return try write { db in
      let hubValue = try self.requireHub(hub, in: db)
      let request = PromoRequest(code: code)
      let found = try request.lookup.flatMap { try self.promotion($0, in: db) }
      let normalized = try request.accepted(found, at: hub, now: now)
      let cart = try self.cartRow(user: user, hub: hub, in: db)
      if cart?.promo != normalized {
        try self.saveVersion(
          (cart?.version ?? 0) + 1, user: user, hub: hub, promo: normalized, reason: PromoRequest.reason,
          correlationID: correlationID, in: db)
      }
      return try self.render(user: user, hub: hubValue, in: db).view.since(seenVersion)
    }
  }

  /// For the checkout question: the priced cart, and whether it is still `version`. When it is,
  /// the cart is marked as in checkout at that version (see `applyProduct`).
  public func checkout(user: String, hub: HubID, version: Int64?) throws -> (cart: CartView, matches: Bool) {
    let now = clock.now()
    return try write { db in
      let hubValue = try self.requireHub(hub, in: db)
      let view = try self.render(user: user, hub: hubValue, in: db).view.since(version)
      let (matches, holds) = CartRules.checkout(asked: version, current: view.version)
      if holds {
        try db.execute(
          "UPDATE carts SET checkout_version = ?, checkout_at = ? WHERE user_id = ? AND hub = ?",
          view.version, now.timeIntervalSince1970, user, hub)
      }
      return (view, matches)
    }
  }

  /// After a reservation shortfall: clamps `user`'s cart at `hub` to the counts StockService
  /// reported, with adjustments and a new version if anything moved.
  public func applyCounts(
    user: String, hub: HubID, counts: [CartCheckoutRequest.Count], correlationID: String?
  ) throws -> CartView {
    try write { db in
      let hubValue = try self.requireHub(hub, in: db)
      guard let cart = try self.cartRow(user: user, hub: hub, in: db) else {
        return try self.render(user: user, hub: hubValue, in: db).view
      }
      var changes: [CartAdjustment.Change] = []
      for count in counts {
        let held = try self.lineQuantity(user: user, hub: hub, sku: count.sku, in: db)
        guard let clamped = CartRules.shortfall(held: held, count: count) else { continue }
        try self.setLine(
          user: user, hub: hub, sku: count.sku, quantity: clamped.quantity, version: cart.version + 1, in: db)
        if let change = clamped.change { changes.append(change) }
      }
      guard !changes.isEmpty else {
        return try self.render(user: user, hub: hubValue, in: db).view
      }
      let version = cart.version + 1
      try self.record(changes, user: user, hub: hub, version: version, in: db)
      try self.saveVersion(
        version, user: user, hub: hub, promo: cart.promo, reason: "shortfall", correlationID: correlationID,
        in: db)
      return try self.render(user: user, hub: hubValue, in: db).view
    }
  }

  // MARK: - Events

  /// Applies `stock.changed` (once per message id): the product copy, then every cart at that
  /// hub holding it. Returns how many carts got a new version.
  @discardableResult
  public func applyStockChanged(
    _ event: StockChanged, version: Int64, messageID: String, consumer: String, correlationID: String?
  ) throws -> Int {
    try once(messageID: messageID, consumer: consumer) { db, now in
      try self.applyProduct(event, version: version, correlationID: correlationID, now: now, in: db)
    }
  }

  /// Applies `hub.changed` (once per message id). A change of pricing, hours or currency gives
  /// every non-empty cart at the hub a new version (its totals or blocker changed).
  @discardableResult
  public func applyHubChanged(
    _ event: HubChanged, version: Int64, messageID: String, consumer: String, correlationID: String?
  ) throws -> Int {
    try once(messageID: messageID, consumer: consumer) { db, _ in
      try self.applyHub(event, version: version, correlationID: correlationID, in: db)
    }
  }

  /// A write that applies a consumed message once: its inbox row and its effect (the number of
  /// carts it changed) commit together; a message already processed changes nothing (0).
  private func once(
    messageID: String, consumer: String, _ effect: (SQLiteConnection, Date) throws -> Int
  ) throws -> Int {
    let now = clock.now()
    return try write { db in
      guard try Inbox.claim(messageID: messageID, consumer: consumer, at: now, in: db) else { return 0 }
      return try effect(db, now)
    }
  }

  /// Applies `order.confirmed`: `user`'s cart at `hub` is emptied (lines, promo and kept
  /// adjustments) with a new version. Nothing happens to a cart that is empty already.
  @discardableResult
  public func applyOrderConfirmed(
    user: String, hub: HubID, messageID: String, consumer: String, correlationID: String?
  ) throws -> Bool {
    try once(messageID: messageID, consumer: consumer) { db, _ in
      guard let cart = try self.cartRow(user: user, hub: hub, in: db) else { return 0 }
      let hasLines =
        try db.queryOne("SELECT 1 FROM cart_lines WHERE user_id = ? AND hub = ? LIMIT 1", user, hub) != nil
      guard CartRules.orderEmpties(hasLines: hasLines, promo: cart.promo) else { return 0 }
      try db.execute("DELETE FROM cart_lines WHERE user_id = ? AND hub = ?", user, hub)
      try db.execute("DELETE FROM cart_adjustments WHERE user_id = ? AND hub = ?", user, hub)
      try self.saveVersion(
        cart.version + 1, user: user, hub: hub, promo: nil, reason: "orderConfirmed",
        correlationID: correlationID,
        in: db)
      return 1
    } == 1
  }

  // MARK: - Catalogue copy

  /// Whether the catalogue copy was ever filled from StockService (or needs no filling because
  /// events already brought hubs).
  public func catalogueSynced() throws -> Bool {
    try database.read { db in try db.queryOne("SELECT 1 FROM catalogue_sync WHERE id = 1") != nil }
  }

  /// Applies a page of the catalogue snapshot: each value replaces the copy only if newer, and
  /// carts are adjusted exactly as the events would have.
  public func applyCatalogue(hubs: [Versioned<HubChanged>], products: [Versioned<StockChanged>]) throws {
    let now = clock.now()
    try write { db in
      for hub in hubs { _ = try self.applyHub(hub.value, version: hub.version, correlationID: nil, in: db) }
      for product in products {
        _ = try self.applyProduct(
          product.value, version: product.version, correlationID: nil, now: now, in: db)
      }
    }
  }

  public func markCatalogueSynced() throws {
    let now = clock.now()
    try write { db in
      try db.execute(
        "INSERT INTO catalogue_sync (id, completed_at) VALUES (1, ?) ON CONFLICT (id) DO UPDATE SET completed_at = excluded.completed_at",
        now.timeIntervalSince1970)
    }
  }

  public func hubIDs() throws -> [HubID] {
    try database.read { db in try db.query("SELECT id FROM hubs ORDER BY id").map { try $0.string(0) } }
  }

  // MARK: - Promotions

  /// Creates or replaces a promotion; carts holding it get a new version (their discount may
  /// have changed). Returns whether it was created.
  @discardableResult
  public func upsertPromotion(_ promo: Promotion, correlationID: String?) throws -> Bool {
    let body = try Self.jsonText(promo)
    return try write { db in
      let existing = try db.queryOne("SELECT body, version FROM promos WHERE code = ?", promo.code)
      if let existing, try existing.string(0) == body { return false }
      try db.execute(
        """
        INSERT INTO promos (code, body, valid_until, version) VALUES (?, ?, ?, 1)
        ON CONFLICT (code) DO UPDATE SET body = excluded.body, valid_until = excluded.valid_until,
          version = promos.version + 1
        """, promo.code, body, promo.validUntil?.timeIntervalSince1970)
      if existing != nil {
        for cart in try self.carts(holdingPromo: promo.code, in: db) {
          try self.saveVersion(
            cart.version + 1, user: cart.user, hub: cart.hub, promo: promo.code, reason: "promo",
            correlationID: correlationID, in: db)
        }
      }
      return existing == nil
    }
  }

  public func promotion(_ code: String) throws -> Promotion? {
    try database.read { db in try self.promotion(code, in: db) }
  }

  /// Deletes a promotion; every cart holding it loses it with `promoRemoved`. False if unknown.
  public func deletePromotion(_ code: String, correlationID: String?) throws -> Bool {
    try write { db in
      guard try db.queryOne("SELECT 1 FROM promos WHERE code = ?", code) != nil else { return false }
      try self.removePromo(code, correlationID: correlationID, in: db)
      try db.execute("DELETE FROM promos WHERE code = ?", code)
      return true
    }
  }

  /// Removes promotions that ran out from every cart holding them (`promoRemoved`). Returns how
  /// many carts changed.
  @discardableResult
  public func removeExpiredPromotions() throws -> Int {
    let now = clock.now()
    return try write { db in
      let codes = try db.query(
        """
        SELECT DISTINCT p.code FROM promos p JOIN carts c ON c.promo_code = p.code
        WHERE p.valid_until IS NOT NULL AND p.valid_until <= ?
        """, now.timeIntervalSince1970
      ).map { try $0.string(0) }
      var changed = 0
      for code in codes { changed += try self.removePromo(code, correlationID: nil, in: db) }
      return changed
    }
  }

  // MARK: - Inside transactions

  /// A write transaction whose cart and hub changes are told to `replies` once it committed.
  ///
  /// The announcement is the first thing that runs after the commit (registered first), so a
  /// reply the body remembers after it (`afterCommit`) is not dropped by its own announcement.
  private func write<T>(_ body: (SQLiteConnection) throws -> T) throws -> T {
    try database.write { db in
      let news = AnnouncementList()
      database.afterCommit { [replies] in
        for item in news.items {
          switch item {
          case .cart(let user, let hub, let version):
            replies.cartChanged(user: user, hub: hub, version: version)
          case .hub(let hub): replies.hubChanged(hub)
          }
        }
      }
      announcements.withLock { $0.removeAll() }
      let result = try body(db)
      news.items = announcements.withLock { list in
        defer { list.removeAll() }
        return list
      }
      return result
    }
  }

  private static func jsonText(_ value: some Encodable) throws -> String {
    String(decoding: try JSON.encode(value), as: UTF8.self)
  }

  struct CartRow {
    var user: String
    var hub: HubID
    var version: Int64
    var promo: String?
    var checkoutVersion: Int64?
    var checkoutAt: Double?
  }

  /// The hub, or `unknownHub` (`catalogueLoading` while the copy has never been filled).
  private func requireHub(_ id: HubID, in db: SQLiteConnection) throws -> HubChanged {
    // The version alone first: the body is read and decoded only when it changed.
    guard let row = try db.queryOne("SELECT version FROM hubs WHERE id = ?", id) else {
      if try db.queryOne("SELECT 1 FROM catalogue_sync WHERE id = 1") == nil {
        throw CartError.catalogueLoading
      }
      throw CartError.unknownHub(id)
    }
    let version = try row.int64(0)
    if let cached = hubCache.withLock({ $0[id] }), cached.version == version { return cached.hub }
    guard let body = try db.queryOne("SELECT body FROM hubs WHERE id = ?", id) else {
      throw CartError.unknownHub(id)
    }
    let hub = try JSON.decode(HubChanged.self, from: body.data(0))
    hubCache.withLock { $0[id] = (version, hub) }
    return hub
  }

  private func promotion(_ code: String, in db: SQLiteConnection) throws -> Promotion? {
    guard let row = try db.queryOne("SELECT version, body FROM promos WHERE code = ?", code) else {
      return nil
    }
    let version = try row.int64(0)
    if let cached = promoCache.withLock({ $0[code] }), cached.version == version { return cached.promo }
    let promo = try JSON.decode(Promotion.self, from: row.data(1))
    promoCache.withLock { $0[code] = (version, promo) }
    return promo
  }

  private func product(hub: HubID, sku: SKU, in db: SQLiteConnection) throws -> CatalogueProduct? {
    try db.queryOne(
      "SELECT name, currency, price, deposit, available, version FROM products WHERE hub = ? AND sku = ?",
      hub, sku
    ).map {
      CatalogueProduct(
        name: try $0.string(0), currency: try $0.string(1), price: try $0.int(2),
        deposit: try $0.optionalInt(3),
        available: try $0.int(4), version: try $0.int64(5))
    }
  }

  private func cartRow(user: String, hub: HubID, in db: SQLiteConnection) throws -> CartRow? {
    try db.queryOne(
      "SELECT version, promo_code, checkout_version, checkout_at FROM carts WHERE user_id = ? AND hub = ?",
      user, hub
    ).map {
      CartRow(
        user: user, hub: hub, version: try $0.int64(0), promo: try $0.optionalString(1),
        checkoutVersion: try $0.optionalInt64(2), checkoutAt: try $0.optionalDouble(3))
    }
  }

  private func carts(holdingPromo code: String, in db: SQLiteConnection) throws -> [CartRow] {
    try db.query("SELECT user_id, hub, version FROM carts WHERE promo_code = ?", code).map {
      CartRow(user: try $0.string(0), hub: try $0.string(1), version: try $0.int64(2), promo: code)
    }
  }

  private func lineQuantity(user: String, hub: HubID, sku: SKU, in db: SQLiteConnection) throws -> Int {
    try db.queryOne(
      "SELECT quantity FROM cart_lines WHERE user_id = ? AND hub = ? AND sku = ?", user, hub, sku
    )?.int(0) ?? 0
  }

  /// Sets a line's quantity (0 deletes it); a new line goes after the others.
  /// A new line's position is the cart version that added it, so lines keep the order they were
  /// added in (versions only rise) without scanning the cart.
  private func setLine(
    user: String, hub: HubID, sku: SKU, quantity: Int, version: Int64, in db: SQLiteConnection
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

  /// The newest adjustment kept for `sku` in this cart.
  private func lastChange(user: String, hub: HubID, sku: SKU, in db: SQLiteConnection) throws
    -> CartAdjustment.Change?
  {
    try db.queryOne(
      """
      SELECT version, kind, sku, quantity, from_units, to_units, currency, code FROM cart_adjustments
      WHERE user_id = ? AND hub = ? AND sku = ? ORDER BY version DESC, seq DESC LIMIT 1
      """, user, hub, sku
    ).flatMap { try Self.adjustment($0)?.change }
  }

  /// Writes the cart's new version (creating the row), drops adjustments beyond those kept, and
  /// puts `cart.changed` in the outbox when changes are published.
  private func saveVersion(
    _ version: Int64, user: String, hub: HubID, promo: String?, reason: String, correlationID: String?,
    lines known: [CartChanged.Line]? = nil, in db: SQLiteConnection
  ) throws {
    let now = clock.now()
    announcements.withLock { $0.append(.cart(user: user, hub: hub, version: version)) }
    try db.execute(
      """
      INSERT INTO carts (user_id, hub, version, promo_code, updated_at) VALUES (?, ?, ?, ?, ?)
      ON CONFLICT (user_id, hub) DO UPDATE SET version = excluded.version, promo_code = excluded.promo_code,
        updated_at = excluded.updated_at
      """, user, hub, version, promo, now.timeIntervalSince1970)
    if let dropped = AdjustmentWindow.droppedThrough(at: version) {
      try db.execute(
        "DELETE FROM cart_adjustments WHERE user_id = ? AND hub = ? AND version <= ?", user, hub, dropped)
    }
    guard publishesChanges else { return }
    let lines =
      try known
      ?? db.query(
        "SELECT sku, quantity FROM cart_lines WHERE user_id = ? AND hub = ? ORDER BY position", user, hub
      ).map { CartChanged.Line(sku: try $0.string(0), quantity: try $0.int(1)) }
    let payload = CartChanged(
      userId: user, hub: hub, version: version, lines: lines, promo: promo, reason: reason)
    try Outbox.append(
      EventEnvelope.message(
        id: ids.next(), type: CartEventType.cartChanged, occurredAt: now, source: CartEventType.source,
        correlationId: correlationID, subject: CartChanged.subject(userId: user, hub: hub), sequence: version,
        payloadJSON: payload.jsonBytes()),
      in: db)
  }

  private func record(
    _ changes: [CartAdjustment.Change], user: String, hub: HubID, version: Int64, in db: SQLiteConnection
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

  /// Removes promo `code` from every cart holding it, with `promoRemoved`.
  @discardableResult
  private func removePromo(_ code: String, correlationID: String?, in db: SQLiteConnection) throws -> Int {
    let carts = try carts(holdingPromo: code, in: db)
    for cart in carts {
      let version = cart.version + 1
      try record([.promoRemoved(code: code)], user: cart.user, hub: cart.hub, version: version, in: db)
      try saveVersion(
        version, user: cart.user, hub: cart.hub, promo: nil, reason: "promo", correlationID: correlationID,
        in: db)
    }
    return carts.count
  }

  /// The product copy takes `event` if it is newer; then every cart holding the product is
  /// clamped to the new count and told about a new price (`StockChange`).
  private func applyProduct(
    _ event: StockChanged, version: Int64, correlationID: String?, now: Date, in db: SQLiteConnection
  ) throws -> Int {
    let change = StockChange(
      event: event, version: version, old: try product(hub: event.hub, sku: event.sku, in: db))
    guard change.isNewer else { return 0 }
    try db.execute(
      """
      INSERT INTO products (hub, sku, name, currency, price, deposit, available, version)
      VALUES (?, ?, ?, ?, ?, ?, ?, ?)
      ON CONFLICT (hub, sku) DO UPDATE SET name = excluded.name, currency = excluded.currency,
        price = excluded.price, deposit = excluded.deposit, available = excluded.available, version = excluded.version
      """, event.hub, event.sku, event.name, event.price.currency, event.price.minorUnits,
      event.deposit?.minorUnits,
      event.available, version)
    guard change.touchesCarts else { return 0 }
    // Only the carts the change can touch are read: a busy product is in many carts, and most
    // hold less than is left.
    let holders = try db.query(
      """
      SELECT l.user_id, l.quantity, c.version, c.promo_code, c.checkout_version, c.checkout_at
      FROM cart_lines l JOIN carts c ON c.user_id = l.user_id AND c.hub = l.hub
      WHERE l.hub = ? AND l.sku = ? AND l.quantity > ?
      """, event.hub, event.sku, change.holdersAbove)
    var changed = 0
    for row in holders {
      let holder = StockChange.Holder(
        quantity: try row.int(1), version: try row.int64(2), checkoutVersion: try row.optionalInt64(4),
        checkoutAt: try row.optionalDouble(5))
      guard let touch = change.touch(holder, now: now, checkoutHold: checkoutHold) else { continue }
      let user = try row.string(0)
      if let quantity = touch.quantity {
        try setLine(
          user: user, hub: event.hub, sku: event.sku, quantity: quantity, version: touch.version, in: db)
      }
      try record(touch.adjustments, user: user, hub: event.hub, version: touch.version, in: db)
      try saveVersion(
        touch.version, user: user, hub: event.hub, promo: try row.optionalString(3),
        reason: touch.reason, correlationID: correlationID, in: db)
      changed += 1
    }
    return changed
  }

  private func applyHub(_ event: HubChanged, version: Int64, correlationID: String?, in db: SQLiteConnection)
    throws
    -> Int
  {
    let old = try db.queryOne("SELECT version, body FROM hubs WHERE id = ?", event.hub)
    let change = HubChange(
      event: event, version: version,
      old: try old.map { (try $0.int64(0), try JSON.decode(HubChanged.self, from: $0.data(1))) })
    guard change.isNewer else { return 0 }
    try db.execute(
      """
      INSERT INTO hubs (id, body, version) VALUES (?, ?, ?)
      ON CONFLICT (id) DO UPDATE SET body = excluded.body, version = excluded.version
      """, event.hub, try Self.jsonText(event), version)
    guard change.touchesCarts else { return 0 }
    announcements.withLock { $0.append(.hub(event.hub)) }
    let carts = try db.query(
      """
      SELECT c.user_id, c.version, c.promo_code FROM carts c
      WHERE c.hub = ? AND EXISTS (SELECT 1 FROM cart_lines l WHERE l.user_id = c.user_id AND l.hub = c.hub)
      """, event.hub)
    for cart in carts {
      try saveVersion(
        try cart.int64(1) + 1, user: try cart.string(0), hub: event.hub, promo: try cart.optionalString(2),
        reason: HubChange.reason, correlationID: correlationID, in: db)
    }
    return carts.count
  }

  /// `hub.hours.status(at: now)`, remembered per hub version until it next changes (at most a
  /// minute, so a status far ahead is recomputed now and then).
  private func hoursStatus(_ hub: HubChanged, at now: Date) -> HoursStatus {
    let version = hubCache.withLock { $0[hub.hub]?.version } ?? -1
    if let cached = hoursCache.withLock({ $0[hub.hub] }), cached.version == version, now < cached.until {
      return cached.status
    }
    let status = hub.hours.status(at: now)
    var until = now.addingTimeInterval(60)
    if let change = status.isOpen ? status.closesAt : status.opensAt, change < until { until = change }
    hoursCache.withLock { $0[hub.hub] = (version, status, until) }
    return status
  }

  /// A cart as rendered, and until when time alone leaves it as it is.
  struct Rendered {
    var view: CartView
    var freshUntil: Date
  }

  /// The whole priced cart as stored in this transaction, with every kept adjustment.
  /// `state` stands in for the cart's stored row (a version about to be saved).
  private func render(user: String, hub: HubChanged, in db: SQLiteConnection, as state: CartRow? = nil) throws
    -> Rendered
  {
    let cart = try state ?? cartRow(user: user, hub: hub.hub, in: db)
    let lines = try db.query(
      """
      SELECT l.sku, p.name, l.quantity, p.price, p.deposit, p.currency
      FROM cart_lines l JOIN products p ON p.hub = l.hub AND p.sku = l.sku
      WHERE l.user_id = ? AND l.hub = ? ORDER BY l.position
      """, user, hub.hub
    ).map { row in
      let currency = try row.string(5)
      return CartPricing.Line(
        sku: try row.string(0), name: try row.string(1), quantity: try row.int(2),
        unitPrice: Money(minorUnits: try row.int(3), currency: currency),
        deposit: try row.optionalInt(4).map { Money(minorUnits: $0, currency: currency) })
    }
    var adjustments: [CartAdjustment] = []
    if cart != nil {
      adjustments = try db.query(
        """
        SELECT version, kind, sku, quantity, from_units, to_units, currency, code FROM cart_adjustments
        WHERE user_id = ? AND hub = ? ORDER BY version, seq
        """, user, hub.hub
      ).compactMap { try Self.adjustment($0) }
    }
    let promo = try cart?.promo.flatMap { try promotion($0, in: db) }
    return priced(hub: hub, version: cart?.version ?? 0, lines: lines, adjustments: adjustments, promo: promo)
  }

  /// The priced cart from its parts (now, with the hub's current hours).
  private func priced(
    hub: HubChanged, version: Int64, lines: [CartPricing.Line], adjustments: [CartAdjustment],
    promo: Promotion?
  ) -> Rendered {
    let now = clock.now()
    let hours = hoursStatus(hub, at: now)
    let priced = CartPricing.price(
      lines, promo: promo,
      context: CartPricing.Context(
        hub: hub.hub, currency: hub.currency, pricing: hub.pricing, hours: hours, now: now))
    let view = CartView(
      hub: hub.hub, version: version, lines: priced.lines, adjustments: adjustments,
      promo: priced.promo,
      totals: priced.totals, blocker: priced.blocker)
    // The reply changes by itself when the hub opens or closes or the promo code runs out.
    var freshUntil = now.addingTimeInterval(replies.maximumAge)
    for moment in [hours.isOpen ? hours.closesAt : hours.opensAt, promo?.validUntil] {
      if let moment, moment > now, moment < freshUntil { freshUntil = moment }
    }
    return Rendered(view: view, freshUntil: freshUntil)
  }
}

extension CartView {
  /// The same cart listing only the adjustments newer than `seenVersion` (all when nil).
  func since(_ seenVersion: Int64?) -> CartView {
    guard let seenVersion else { return self }
    var view = self
    view.adjustments.removeAll { $0.version <= seenVersion }
    return view
  }
}

extension CartStore {
  /// Forgets inbox entries processed more than `retention` ago (longer than the broker could
  /// redeliver them), as StockStore does.
  public func purgeInbox(retention: TimeInterval = 7 * 86_400) throws -> Int {
    let cutoff = clock.now().addingTimeInterval(-retention)
    return try database.write { db in try Inbox.purge(olderThan: cutoff, in: db) }
  }
}

extension CartPricing.Line {
  /// A line as a reply showed it.
  init(_ view: CartLineView) {
    self.init(
      sku: view.sku, name: view.name, quantity: view.quantity, unitPrice: view.unitPrice,
      deposit: view.deposit)
  }
}

extension CartStore {
  /// The cart rendered from the tables alone, bypassing remembered replies (for tests that check
  /// the replies built from memory against it).
  func renderedFromTables(user: String, hub: HubID) throws -> CartView {
    try database.read { db in try self.render(user: user, hub: try self.requireHub(hub, in: db), in: db).view
    }
  }
}

/// The cart and hub changes of one write, filled in by the end of its body and announced to the
/// reply cache after its commit.
private final class AnnouncementList: @unchecked Sendable {
  var items: [CartStore.Announcement] = []
}
