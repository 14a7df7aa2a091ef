import Foundation
import GrocerContracts
import GrocerCore
import GrocerStorage

/// NotifyGateway's database: device tokens, Live Activities, the newest pending update per
/// order, queued alerts. Synchronous; async callers go through `database.onWriterQueue`.
public final class NotifyStore: Sendable {
  public let database: SQLiteDatabase
  private let clock: any WallClock
  /// How long a Live Activity update or an alert is worth delivering.
  let updateLifetime: TimeInterval

  public init(database: SQLiteDatabase, clock: any WallClock, updateLifetime: TimeInterval = 600) {
    self.database = database
    self.clock = clock
    self.updateLifetime = updateLifetime
  }

  // MARK: - Devices

  /// Registers `token` for `user` (a token moves to whoever registered it last).
  public func registerDevice(_ token: String, user: String) throws {
    try database.write { db in
      try db.execute(
        """
        INSERT INTO devices (token, user_id, created_at) VALUES (?, ?, ?)
        ON CONFLICT (token) DO UPDATE SET user_id = excluded.user_id
        """, token, user, clock.now().timeIntervalSince1970)
    }
  }

  /// Removes `user`'s `token`; false if they had no such token.
  @discardableResult
  public func removeDevice(_ token: String, user: String) throws -> Bool {
    try database.write { db in
      try db.execute("DELETE FROM devices WHERE token = ? AND user_id = ?", token, user)
      return db.changes > 0
    }
  }

  public func devices(of user: String) throws -> [String] {
    try database.read { db in
      try db.query("SELECT token FROM devices WHERE user_id = ? ORDER BY token", user).map {
        try $0.string(0)
      }
    }
  }

  // MARK: - Consumed events (each once, by message id)

  /// A Live Activity token for an order: a new token replaces the old (a new activity: what its
  /// card shows is unknown, so the next update goes out in full).
  /// `sequence` is the event's (TrackingService counts an order's tokens): an older token event
  /// arriving after a newer one (a redelivery) changes nothing.
  @discardableResult
  public func setActivityToken(
    _ event: LiveActivityToken, sequence: Int64 = 1, messageID: String, consumer: String
  ) throws -> Bool {
    let now = clock.now()
    return try once(messageID, consumer, now) { db in
      let current = try db.queryOne(
        "SELECT token, token_version FROM activities WHERE order_id = ?", event.orderId)
      if let current {
        guard try current.int64(1) < sequence else { return }
        if try current.optionalString(0) != event.token {
          try db.execute(
            """
            UPDATE activities SET token = ?, token_version = ?, shown = NULL, ended = 0, started_at = ?
            WHERE order_id = ?
            """, event.token, sequence, now.timeIntervalSince1970, event.orderId)
        } else {
          try db.execute(
            "UPDATE activities SET token_version = ? WHERE order_id = ?", sequence, event.orderId)
        }
      } else {
        try db.execute(
          """
          INSERT INTO activities (order_id, user_id, token, token_version, started_at) VALUES (?, ?, ?, ?, ?)
          """, event.orderId, event.userId, event.token, sequence, now.timeIntervalSince1970)
      }
      // Whatever is pending for the order is due now that there is somewhere to send it.
      try db.execute(
        "UPDATE pending SET not_before = ? WHERE order_id = ?", now.timeIntervalSince1970, event.orderId)
    }
  }

  /// What became of a `tracking.updated`.
  public enum Queued: Sendable, Hashable {
    case queued
    /// It replaced an older pending update of the same order.
    case coalesced
    /// Older than what is pending or was handled already.
    case stale
    case duplicate
  }

  /// Keeps `update` as the order's pending update if it is newer than the one pending (the older
  /// is coalesced) and than what was handled. Delivered orders without a Live Activity get an
  /// alert on the user's devices instead.
  public func enqueue(_ update: TrackingUpdated, occurredAt: Date, messageID: String, consumer: String) throws
    -> Queued
  {
    let now = clock.now()
    var result = Queued.duplicate
    _ = try once(messageID, consumer, now) { db in
      let snapshot = update.snapshot
      let handled = try db.queryOne(
        "SELECT last_version, token IS NOT NULL FROM activities WHERE order_id = ?", snapshot.orderId)
      if let handled, try handled.int64(0) >= snapshot.version {
        result = .stale
        return
      }
      let pending = try db.queryOne("SELECT version FROM pending WHERE order_id = ?", snapshot.orderId)
      if let pending, try pending.int64(0) >= snapshot.version {
        result = .stale
        return
      }
      try db.execute(
        """
        INSERT INTO pending (order_id, user_id, version, snapshot, occurred_at, enqueued_at, not_before, expires_at)
        VALUES (?, ?, ?, ?, ?, ?, ?, ?)
        ON CONFLICT (order_id) DO UPDATE SET version = excluded.version, snapshot = excluded.snapshot,
          occurred_at = excluded.occurred_at, enqueued_at = excluded.enqueued_at, attempts = 0,
          not_before = excluded.not_before, expires_at = excluded.expires_at
        """, snapshot.orderId, update.userId, snapshot.version,
        String(decoding: snapshot.jsonBytes, as: UTF8.self),
        occurredAt.timeIntervalSince1970, now.timeIntervalSince1970, now.timeIntervalSince1970,
        (now + self.updateLifetime).timeIntervalSince1970)
      result = pending == nil ? .queued : .coalesced
      let hasActivity = try handled?.bool(1) ?? false
      if snapshot.status == .delivered, update.changed.contains(.stage), !hasActivity {
        try self.queueAlert(
          AlertText(title: "Delivered", body: "Your order is at the door. Enjoy!"), user: update.userId,
          orderId: snapshot.orderId, occurredAt: occurredAt, in: db)
      }
    }
    return result
  }

  /// An alert for every device of `user` (order confirmed or declined), once per message id.
  @discardableResult
  public func queueAlert(
    _ text: AlertText, user: String, orderId: String, occurredAt: Date, messageID: String, consumer: String
  ) throws -> Bool {
    try once(messageID, consumer, clock.now()) { db in
      try self.queueAlert(text, user: user, orderId: orderId, occurredAt: occurredAt, in: db)
    }
  }

  private func queueAlert(
    _ text: AlertText, user: String, orderId: String, occurredAt: Date, in db: SQLiteConnection
  )
    throws
  {
    let now = clock.now().timeIntervalSince1970
    try db.execute(
      """
      INSERT INTO alerts (token, user_id, order_id, title, body, occurred_at, not_before, expires_at)
      SELECT token, user_id, ?, ?, ?, ?, ?, ? FROM devices WHERE user_id = ?
      """, orderId, text.title, text.body, occurredAt.timeIntervalSince1970, now, now + updateLifetime, user)
  }

  private func once(
    _ messageID: String, _ consumer: String, _ now: Date, _ effect: (SQLiteConnection) throws -> Void
  )
    throws -> Bool
  {
    try database.write { db in
      guard try Inbox.claim(messageID: messageID, consumer: consumer, at: now, in: db) else { return false }
      try effect(db)
      return true
    }
  }

  // MARK: - Delivery

  /// A pending Live Activity update with where it goes and what the activity knows.
  public struct DueUpdate: Sendable, Hashable {
    public var orderId: String
    public var token: String
    public var snapshot: TrackingSnapshot
    public var state: ActivityState
    public var occurredAt: Date
    /// When this gateway received it (full precision; event times are whole seconds).
    public var enqueuedAt: Date
    public var attempts: Int
    public var expiresAt: Date
  }

  /// Pending updates whose activity has a token, due now, oldest first.
  public func dueUpdates(limit: Int) throws -> [DueUpdate] {
    let now = clock.now().timeIntervalSince1970
    return try database.read { db in
      try db.query(
        """
        SELECT p.order_id, a.token, p.snapshot, \(Self.stateColumns), p.occurred_at, p.attempts,
          p.expires_at, p.enqueued_at
        FROM pending p JOIN activities a ON a.order_id = p.order_id
        WHERE a.token IS NOT NULL AND p.not_before <= ?
        ORDER BY p.not_before LIMIT ?
        """, now, limit
      ).map { row in
        DueUpdate(
          orderId: try row.string(0), token: try row.string(1),
          snapshot: try JSON.decode(TrackingSnapshot.self, from: Data(try row.string(2).utf8)),
          // Columns 3…8 are the state's.
          state: try Self.state(row, from: 3), occurredAt: Date(timeIntervalSince1970: try row.double(9)),
          enqueuedAt: Date(timeIntervalSince1970: try row.double(12)), attempts: try row.int(10),
          expiresAt: Date(timeIntervalSince1970: try row.double(11)))
      }
    }
  }

  /// How a due update ended.
  public enum Outcome: Sendable, Hashable {
    /// Sent (or judged not worth sending): the activity's state moves on, the update is done.
    case handled(ActivityState)
    /// Try again at `at` (a 429 or 5xx, before the expiration).
    case retry(at: Date)
    /// Dropped: past its expiration, or refused for good.
    case dropped
    /// The token is dead (410, BadDeviceToken): forget it; the update waits for a new one.
    case tokenGone
  }

  /// Records how `update` ended, unless a newer update replaced it meanwhile (then only the
  /// activity's state is kept, and the newer one stays pending).
  public func finish(_ update: DueUpdate, _ outcome: Outcome) throws {
    try database.write { db in
      let stillPending =
        try db.queryOne("SELECT version FROM pending WHERE order_id = ?", update.orderId)?.int64(0)
        == update.snapshot.version
      switch outcome {
      case .handled(let state):
        try db.execute(
          """
          UPDATE activities SET last_version = MAX(last_version, ?), shown = ?, ended = ?, high_times = ?,
            last_timestamp = MAX(last_timestamp, ?)
          WHERE order_id = ? AND token = ?
          """, state.lastVersion,
          try state.shown.map { String(decoding: try JSON.encode($0), as: UTF8.self) },
          state.ended, Self.text(state.highPriorityTimes), state.lastTimestamp, update.orderId, update.token)
        // Sent to a token that was replaced meanwhile: the new activity has not seen it, so the
        // update stays pending for it and the activity's state is not the old one's.
        guard db.changes > 0 else { return }
        if stillPending { try db.execute("DELETE FROM pending WHERE order_id = ?", update.orderId) }
      case .retry(let at):
        if stillPending {
          try db.execute(
            "UPDATE pending SET attempts = attempts + 1, not_before = ? WHERE order_id = ?",
            at.timeIntervalSince1970, update.orderId)
        }
      case .dropped:
        if stillPending { try db.execute("DELETE FROM pending WHERE order_id = ?", update.orderId) }
      case .tokenGone:
        try db.execute(
          "UPDATE activities SET token = NULL WHERE order_id = ? AND token = ?", update.orderId, update.token)
      }
    }
  }

  /// A queued alert for one device.
  public struct DueAlert: Sendable, Hashable {
    public var seq: Int64
    public var token: String
    public var orderId: String
    public var text: AlertText
    public var occurredAt: Date
    public var attempts: Int
    public var expiresAt: Date
  }

  public func dueAlerts(limit: Int) throws -> [DueAlert] {
    let now = clock.now().timeIntervalSince1970
    return try database.read { db in
      try db.query(
        """
        SELECT a.seq, a.token, a.order_id, a.title, a.body, a.occurred_at, a.attempts, a.expires_at FROM alerts a
        JOIN devices d ON d.token = a.token AND d.user_id = a.user_id
        WHERE a.not_before <= ? ORDER BY a.not_before LIMIT ?
        """, now, limit
      ).map {
        DueAlert(
          seq: try $0.int64(0), token: try $0.string(1), orderId: try $0.string(2),
          text: AlertText(title: try $0.string(3), body: try $0.string(4)),
          occurredAt: Date(timeIntervalSince1970: try $0.double(5)), attempts: try $0.int(6),
          expiresAt: Date(timeIntervalSince1970: try $0.double(7)))
      }
    }
  }

  /// Records how an alert ended: done (delivered, dropped), retried later, or its device gone.
  public func finish(_ alert: DueAlert, retryAt: Date?, tokenGone: Bool) throws {
    try database.write { db in
      if let retryAt {
        try db.execute(
          "UPDATE alerts SET attempts = attempts + 1, not_before = ? WHERE seq = ?",
          retryAt.timeIntervalSince1970,
          alert.seq)
      } else {
        try db.execute("DELETE FROM alerts WHERE seq = ?", alert.seq)
      }
      if tokenGone {
        try db.execute("DELETE FROM devices WHERE token = ?", alert.token)
        try db.execute("DELETE FROM alerts WHERE token = ?", alert.token)
      }
    }
  }

  /// The activity of `orderId` (tests, operators).
  public func activity(_ orderId: String) throws -> (token: String?, state: ActivityState)? {
    try database.read { db in
      try db.queryOne(
        "SELECT a.token, \(Self.stateColumns) FROM activities a WHERE a.order_id = ?",
        orderId
      ).map { row in (try row.optionalString(0), try Self.state(row, from: 1)) }
    }
  }

  /// Forgets what can no longer be delivered: updates and alerts past their expiration (an
  /// order whose app never registered a Live Activity), and alerts whose device went to another
  /// user. Returns how many rows went.
  @discardableResult
  public func purgeUndeliverable() throws -> Int {
    let now = clock.now().timeIntervalSince1970
    return try database.write { db in
      try db.execute("DELETE FROM pending WHERE expires_at < ?", now)
      var removed = db.changes
      try db.execute(
        """
        DELETE FROM alerts WHERE expires_at < ? OR NOT EXISTS (
          SELECT 1 FROM devices d WHERE d.token = alerts.token AND d.user_id = alerts.user_id)
        """, now)
      removed += db.changes
      return removed
    }
  }

  /// An activity's state as `state(_:from:)` reads it (five columns of `activities a`).
  static let stateColumns = "a.last_version, a.shown, a.ended, a.high_times, a.started_at, a.last_timestamp"

  static func state(_ row: SQLRow, from first: Int) throws -> ActivityState {
    var state = ActivityState(startedAt: Date(timeIntervalSince1970: try row.double(first + 4)))
    state.lastVersion = try row.int64(first)
    state.shown = try row.optionalString(first + 1).map {
      try JSON.decode(LiveActivityContent.self, from: Data($0.utf8))
    }
    state.ended = try row.bool(first + 2)
    state.highPriorityTimes = try times(row.optionalString(first + 3))
    state.lastTimestamp = try row.int(first + 5)
    return state
  }

  static func times(_ text: String?) throws -> [Date] {
    guard let text else { return [] }
    return try JSON.decode([Double].self, from: Data(text.utf8)).map(Date.init(timeIntervalSince1970:))
  }

  static func text(_ times: [Date]) -> String {
    "[" + times.map { String($0.timeIntervalSince1970) }.joined(separator: ",") + "]"
  }

  /// Pending updates (tests, the load tool).
  public func pendingCount() throws -> Int {
    try database.read { try $0.queryOne("SELECT count(*) FROM pending")?.int(0) ?? 0 }
  }
}
