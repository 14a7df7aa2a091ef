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
  let hoursCache = Mutex<[HubID: (version: Int64, status: HoursStatus, until: Date)]>([:])

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

    let db: any SQLConnection
    var changes: [Change] = []
    /// What the write changed, once its body returned: told to `replies` after the commit.
    var announced: [Change] = []

    init(_ db: any SQLConnection) { self.db = db }
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
  func requireHub(_ id: HubID, in db: any SQLConnection) throws -> HubChanged {
    if let hub = try store.hub(id, in: db) { return hub }
    throw CartError.missingHub(id, catalogueSynced: try store.catalogueSynced(in: db))
  }

  /// Forgets inbox entries processed more than `retention` ago (longer than the broker could
  /// redeliver them), as StockCommands does.
  public func purgeInbox(retention: TimeInterval = 7 * 86_400) throws -> Int {
    try store.purgeInbox(olderThan: clock.now().addingTimeInterval(-retention))
  }
}
