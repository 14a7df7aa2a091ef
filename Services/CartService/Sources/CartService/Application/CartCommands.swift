import Foundation
import GrocerContracts
import GrocerCore
import GrocerStorage
import Synchronization

/// The cart's use cases, one method per intent: each opens one transaction on the store, loads
/// what it needs, asks Domain what to do, and records the new state with its `cart.changed` in
/// that transaction. The HTTP controller and the event consumers call these; neither decides.
///
/// Writes run on the single writer, which serializes the writes to one cart: a cart's version is
/// read and raised inside the transaction that changes it. A reply is rendered inside that
/// transaction too, so it shows exactly the version it created; `replies` learns of every
/// committed change.
public final class CartCommands: Sendable {
  public let store: CartStore
  /// Replies in memory for the HTTP fast path; told about every committed change.
  public let replies: CartReplyCache
  let clock: any WallClock
  private let ids: any IDGenerator
  /// How long a cart in checkout keeps what a reservation took from the counts (`StockChange`).
  let checkoutHold: TimeInterval
  /// Whether each new version puts `cart.changed` in the outbox.
  private let publishesChanges: Bool
  /// Each hub's open/closed status with the moment it next changes (computing it walks the week
  /// with a calendar, too slow for every reply).
  private let hoursCache = Mutex<[HubID: (version: Int64, status: HoursStatus, until: Date)]>([:])

  public init(
    store: CartStore, clock: any WallClock, ids: any IDGenerator, checkoutHold: TimeInterval = 15 * 60,
    publishesChanges: Bool = false, replies: CartReplyCache = CartReplyCache()
  ) {
    self.store = store
    self.replies = replies
    self.clock = clock
    self.ids = ids
    self.checkoutHold = checkoutHold
    self.publishesChanges = publishesChanges
  }

  /// One write in progress: its connection, and the carts and hubs it changed.
  final class Write: @unchecked Sendable {
    enum Change {
      case cart(user: String, hub: HubID, version: Int64)
      case hub(HubID)
    }

    let db: SQLiteConnection
    var changes: [Change] = []
    /// What the write changed, once its body returned: told to `replies` after the commit.
    var announced: [Change] = []

    init(_ db: SQLiteConnection) { self.db = db }
  }

  /// A write transaction whose cart and hub changes are told to `replies` once it committed.
  ///
  /// The announcement is the first thing that runs after the commit (registered first), so a
  /// reply the body remembers after it (`afterCommit`) is not dropped by its own announcement.
  func write<T>(_ body: (Write) throws -> T) throws -> T {
    let database = store.database
    return try database.write { db in
      let write = Write(db)
      database.afterCommit { [replies] in
        for change in write.announced {
          switch change {
          case .cart(let user, let hub, let version):
            replies.cartChanged(user: user, hub: hub, version: version)
          case .hub(let hub): replies.hubChanged(hub)
          }
        }
      }
      let result = try body(write)
      write.announced = write.changes
      return result
    }
  }

  /// Records the cart's new version: its row, the adjustments it no longer keeps, and
  /// `cart.changed` in the outbox when changes are published (with `known` lines, or as stored).
  func saveVersion(
    _ version: Int64, user: String, hub: HubID, promo: String?, reason: String, correlationID: String?,
    lines known: [CartChanged.Line]? = nil, in write: Write
  ) throws {
    let now = clock.now()
    write.changes.append(.cart(user: user, hub: hub, version: version))
    try store.saveVersion(
      version, user: user, hub: hub, promo: promo, at: now,
      droppingThrough: AdjustmentWindow.droppedThrough(at: version), in: write.db)
    guard publishesChanges else { return }
    let lines = try known ?? store.lineQuantities(user: user, hub: hub, in: write.db)
    let payload = CartChanged(
      userId: user, hub: hub, version: version, lines: lines, promo: promo, reason: reason)
    try store.append(
      EventEnvelope.message(
        id: ids.next(), type: CartEventType.cartChanged, occurredAt: now, source: CartEventType.source,
        correlationId: correlationID, subject: CartChanged.subject(userId: user, hub: hub), sequence: version,
        payloadJSON: payload.jsonBytes()),
      in: write.db)
  }

  /// The hub a cart is at, or why there is none (`CartError.missingHub`).
  func requireHub(_ id: HubID, in db: SQLiteConnection) throws -> HubChanged {
    if let hub = try store.hub(id, in: db) { return hub }
    throw CartError.missingHub(id, catalogueSynced: try store.catalogueSynced(in: db))
  }

  // MARK: - Rendering

  /// A cart as rendered, and until when time alone leaves it as it is.
  struct Rendered {
    var view: CartView
    var freshUntil: Date
  }

  /// The whole priced cart as stored in this transaction, with every kept adjustment.
  /// `state` stands in for the cart's stored row (a version about to be saved).
  func render(
    user: String, hub: HubChanged, in db: SQLiteConnection, as state: CartStore.CartRow? = nil
  ) throws -> Rendered {
    let cart = try state ?? store.cart(user: user, hub: hub.hub, in: db)
    let lines = try store.pricedLines(user: user, hub: hub.hub, in: db)
    let adjustments = try cart == nil ? [] : store.adjustments(user: user, hub: hub.hub, in: db)
    let promo = try cart?.promo.flatMap { try store.promotion($0, in: db) }
    return priced(hub: hub, version: cart?.version ?? 0, lines: lines, adjustments: adjustments, promo: promo)
  }

  /// The priced cart from its parts (now, with the hub's current hours).
  func priced(
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

  /// `hub.hours.status(at: now)`, remembered per hub version until it next changes (at most a
  /// minute, so a status far ahead is recomputed now and then).
  private func hoursStatus(_ hub: HubChanged, at now: Date) -> HoursStatus {
    let version = store.cachedVersion(ofHub: hub.hub) ?? -1
    if let cached = hoursCache.withLock({ $0[hub.hub] }), cached.version == version, now < cached.until {
      return cached.status
    }
    let status = hub.hours.status(at: now)
    var until = now.addingTimeInterval(60)
    if let change = status.isOpen ? status.closesAt : status.opensAt, change < until { until = change }
    hoursCache.withLock { $0[hub.hub] = (version, status, until) }
    return status
  }

  /// The cart rendered from the tables alone, bypassing remembered replies (for tests that check
  /// the replies built from memory against it).
  func renderedFromTables(user: String, hub: HubID) throws -> CartView {
    try store.database.read { db in
      try self.render(user: user, hub: try self.requireHub(hub, in: db), in: db).view
    }
  }

  /// Forgets inbox entries processed more than `retention` ago (longer than the broker could
  /// redeliver them), as StockStore does.
  public func purgeInbox(retention: TimeInterval = 7 * 86_400) throws -> Int {
    try store.purgeInbox(olderThan: clock.now().addingTimeInterval(-retention))
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

extension CartPricing.Line {
  /// A line as a reply showed it.
  init(_ view: CartLineView) {
    self.init(
      sku: view.sku, name: view.name, quantity: view.quantity, unitPrice: view.unitPrice,
      deposit: view.deposit)
  }
}
