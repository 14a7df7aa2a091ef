import Foundation
import GrocerContracts
import GrocerCore
import GrocerStorage

/// NotifyGateway's database, SQL only: device tokens, Live Activities, the newest pending update
/// per order, queued alerts. Written inside the transaction a use case (`NotifyCommands`,
/// `DeliveryEngine`) opens; synchronous, so async callers go through `database.onWriterQueue`.
public final class NotifyStore: Sendable {
  public let database: any SQLDatabase

  public init(database: any SQLDatabase) {
    self.database = database
  }

  // MARK: - Devices

  /// Registers `token` for `user` (a token moves to whoever registered it last).
  public func registerDevice(_ token: String, user: String, at now: Date, in db: any SQLConnection) throws {
    try db.execute(
      """
      INSERT INTO devices (token, user_id, created_at) VALUES (?, ?, ?)
      ON CONFLICT (token) DO UPDATE SET user_id = excluded.user_id
      """, token, user, now.timeIntervalSince1970)
  }

  /// Removes `user`'s `token`; false if they had no such token.
  public func removeDevice(_ token: String, user: String, in db: any SQLConnection) throws -> Bool {
    try db.execute("DELETE FROM devices WHERE token = ? AND user_id = ?", token, user)
    return db.changes > 0
  }

  /// Sets (or, nil, removes) the push-to-start token of `user`'s device `token`; false if that
  /// device is not theirs.
  public func setStartToken(
    _ startToken: String?, device token: String, user: String, in db: any SQLConnection
  )
    throws -> Bool
  {
    try db.execute(
      "UPDATE devices SET start_token = ? WHERE token = ? AND user_id = ?", startToken, token, user)
    return db.changes > 0
  }

  public func devices(of user: String) throws -> [String] {
    try database.read { db in
      try db.query("SELECT token FROM devices WHERE user_id = ? ORDER BY token", user).map {
        try $0.string(0)
      }
    }
  }

  // MARK: - Activities

  /// The activity's token and the sequence of the token event that set it (nil: no activity).
  public func activityToken(_ orderId: String, in db: any SQLConnection) throws -> (
    token: String?, sequence: Int64
  )? {
    try db.queryOne("SELECT token, token_version FROM activities WHERE order_id = ?", orderId).map {
      (try $0.optionalString(0), try $0.int64(1))
    }
  }

  /// A new activity for `event`'s order, started at `now`.
  public func startActivity(
    _ event: LiveActivityToken, sequence: Int64, at now: Date, in db: any SQLConnection
  ) throws {
    try db.execute(
      """
      INSERT INTO activities (order_id, user_id, token, token_version, started_at) VALUES (?, ?, ?, ?, ?)
      """, event.orderId, event.userId, event.token, sequence, now.timeIntervalSince1970)
  }

  /// A new token for the order's activity: a new activity, started at `now`, that shows nothing.
  public func replaceActivityToken(
    _ orderId: String, token: String, sequence: Int64, at now: Date, in db: any SQLConnection
  ) throws {
    try db.execute(
      """
      UPDATE activities SET token = ?, token_version = ?, shown = NULL, ended = 0, started_at = ?
      WHERE order_id = ?
      """, token, sequence, now.timeIntervalSince1970, orderId)
  }

  /// The same token under a newer sequence.
  public func renumberActivityToken(_ orderId: String, sequence: Int64, in db: any SQLConnection) throws {
    try db.execute("UPDATE activities SET token_version = ? WHERE order_id = ?", sequence, orderId)
  }

  /// The activity's state after a push to `token`, and `sender`'s claim on it let go in the same
  /// statement (one write of the row a push); false when the activity has another token now (then
  /// nothing changed: release the claim with `releaseActivity`).
  public func saveActivityState(
    _ state: ActivityState, orderId: String, token: String, releasing sender: String, in db: any SQLConnection
  ) throws -> Bool {
    try db.execute(
      """
      UPDATE activities SET last_version = CASE WHEN last_version > ? THEN last_version ELSE ? END, shown = ?,
        ended = ?, high_times = ?, last_timestamp = CASE WHEN last_timestamp > ? THEN last_timestamp ELSE ? END,
        sending_until = CASE WHEN sender = ? THEN NULL ELSE sending_until END
      WHERE order_id = ? AND token = ?
      """, state.lastVersion, state.lastVersion,
      state.shown.map { String(decoding: $0.jsonBytes, as: UTF8.self) },
      state.ended, Self.text(state.highPriorityTimes), state.lastTimestamp, state.lastTimestamp, sender,
      orderId,
      token)
    return db.changes > 0
  }

  /// Forgets the activity's token if it is still `token`.
  public func forgetActivityToken(_ orderId: String, token: String, in db: any SQLConnection) throws {
    try db.execute("UPDATE activities SET token = NULL WHERE order_id = ? AND token = ?", orderId, token)
  }

  /// What an order's activity handled last (its version, whether it has a token, whether it
  /// ended; nil: no activity) and the version of its pending update (nil: none), in one read.
  public func versions(_ orderId: String, in db: any SQLConnection) throws -> (
    handled: (version: Int64, hasToken: Bool, ended: Bool)?, pending: Int64?
  ) {
    let row = try db.queryOne(
      """
      SELECT a.order_id IS NOT NULL, a.last_version, a.token IS NOT NULL, a.ended, p.version
      FROM (SELECT CAST(? AS TEXT) AS id) o
      LEFT JOIN activities a ON a.order_id = o.id LEFT JOIN pending p ON p.order_id = o.id
      """, orderId)
    guard let row else { return (nil, nil) }
    let handled = try row.bool(0) ? (try row.int64(1), try row.bool(2), try row.bool(3)) : nil
    return (handled, try row.optionalInt64(4))
  }

  // MARK: - Pending updates

  /// The version of the order's pending update (nil: none).
  public func pendingVersion(_ orderId: String, in db: any SQLConnection) throws -> Int64? {
    try db.queryOne("SELECT version FROM pending WHERE order_id = ?", orderId)?.int64(0)
  }

  /// Makes `update` the order's pending update, received at `now`, with no attempts yet; false
  /// (nothing changed) when a newer one is pending. The upsert compares the versions itself, so
  /// the newest stays pending whatever the caller read before (two replicas' consumers may both
  /// have read "nothing pending" for one order). It is due at `now`, or as early as the update it
  /// replaces (unless that one was being retried): an activity updated more often than the
  /// engine comes round to it keeps its place instead of going to the back each time.
  @discardableResult
  public func savePending(
    _ update: TrackingUpdated, occurredAt: Date, correlationID: String? = nil, at now: Date, expiresAt: Date,
    in db: any SQLConnection
  ) throws -> Bool {
    let snapshot = update.snapshot
    try db.execute(
      """
      INSERT INTO pending (order_id, user_id, version, snapshot, occurred_at, enqueued_at, not_before, expires_at,
        correlation_id)
      VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
      ON CONFLICT (order_id) DO UPDATE SET version = excluded.version, snapshot = excluded.snapshot,
        occurred_at = excluded.occurred_at, enqueued_at = excluded.enqueued_at, attempts = 0,
        not_before = CASE WHEN pending.attempts = 0 AND pending.not_before < excluded.not_before
          THEN pending.not_before ELSE excluded.not_before END,
        expires_at = excluded.expires_at, correlation_id = excluded.correlation_id
      WHERE pending.version < excluded.version
      """, snapshot.orderId, update.userId, snapshot.version,
      String(decoding: snapshot.jsonBytes, as: UTF8.self),
      occurredAt.timeIntervalSince1970, now.timeIntervalSince1970, now.timeIntervalSince1970,
      expiresAt.timeIntervalSince1970, correlationID)
    return db.changes > 0
  }

  /// Makes whatever is pending for the order due at `now`.
  public func makePendingDue(_ orderId: String, at now: Date, in db: any SQLConnection) throws {
    try db.execute("UPDATE pending SET not_before = ? WHERE order_id = ?", now.timeIntervalSince1970, orderId)
  }

  /// One more attempt of the order's pending update, due again at `at`, if it is still `version`
  /// (a newer one that replaced it meanwhile starts with no attempts).
  public func retryPending(_ orderId: String, version: Int64, at: Date, in db: any SQLConnection) throws {
    try db.execute(
      "UPDATE pending SET attempts = attempts + 1, not_before = ? WHERE order_id = ? AND version = ?",
      at.timeIntervalSince1970, orderId, version)
  }

  /// Removes the order's pending update if it is still `version` (a newer one stays pending).
  public func deletePending(_ orderId: String, version: Int64, in db: any SQLConnection) throws {
    try db.execute("DELETE FROM pending WHERE order_id = ? AND version = ?", orderId, version)
  }

  // MARK: - Alerts

  /// An alert for every device of `user`, due at `now`.
  public func queueAlert(
    _ text: AlertText, user: String, orderId: String, occurredAt: Date, correlationID: String? = nil,
    at now: Date,
    expiresAt: Date, in db: any SQLConnection
  ) throws {
    try db.execute(
      """
      INSERT INTO alerts (token, user_id, order_id, title, body, occurred_at, not_before, expires_at, correlation_id)
      SELECT token, user_id, ?, ?, ?, ?, ?, ?, ? FROM devices WHERE user_id = ?
      """, orderId, text.title, text.body, occurredAt.timeIntervalSince1970, now.timeIntervalSince1970,
      expiresAt.timeIntervalSince1970, correlationID, user)
  }

  /// A background push for every device of `user`, due at `now`: the order finished as `status`.
  public func queueRefresh(
    orderId: String, status: TrackingStatus, user: String, occurredAt: Date, correlationID: String?,
    at now: Date, expiresAt: Date, in db: any SQLConnection
  ) throws {
    try db.execute(
      """
      INSERT INTO alerts (token, user_id, order_id, title, body, kind, status, occurred_at, not_before, expires_at,
        correlation_id)
      SELECT token, user_id, ?, '', '', 'refresh', ?, ?, ?, ?, ? FROM devices WHERE user_id = ?
      """, orderId, status.rawValue, occurredAt.timeIntervalSince1970, now.timeIntervalSince1970,
      expiresAt.timeIntervalSince1970, correlationID, user)
  }

  /// One more attempt of the alert, due again at `at` (and no longer being sent).
  public func retryAlert(_ seq: Int64, at: Date, in db: any SQLConnection) throws {
    try db.execute(
      "UPDATE alerts SET attempts = attempts + 1, not_before = ?, sending_until = NULL WHERE seq = ?",
      at.timeIntervalSince1970, seq)
  }

  public func deleteAlert(_ seq: Int64, in db: any SQLConnection) throws {
    try db.execute("DELETE FROM alerts WHERE seq = ?", seq)
  }

  /// Forgets a device token and every alert queued for it.
  public func forgetDevice(_ token: String, in db: any SQLConnection) throws {
    try db.execute("DELETE FROM devices WHERE token = ?", token)
    try db.execute("DELETE FROM alerts WHERE token = ?", token)
  }

  // MARK: - Delivery

  /// A pending Live Activity update with where it goes and what the activity knows.
  public struct DueUpdate: Sendable, Hashable {
    public var orderId: String
    public var userId: String
    public var token: String
    public var snapshot: TrackingSnapshot
    public var state: ActivityState
    public var occurredAt: Date
    /// When this gateway received it (full precision; event times are whole seconds).
    public var enqueuedAt: Date
    public var attempts: Int
    public var expiresAt: Date
    /// The request id that caused the update.
    public var correlationID: String?
  }

  /// Pending updates due at `now` (tests, operators; `DeliveryEngine` claims what it sends).
  public func dueUpdates(at now: Date, limit: Int) throws -> [DueUpdate] {
    try database.read { try self.dueUpdates(at: now, limit: limit, sender: "", in: $0) }
  }

  /// Pending updates whose activity has a token, due at `now`, that `sender` may send (no other
  /// sender's claim on the activity holds at `now`), oldest first.
  public func dueUpdates(at now: Date, limit: Int, sender: String, in db: any SQLConnection) throws
    -> [DueUpdate]
  {
    let now = now.timeIntervalSince1970
    return try db.query(
      """
      SELECT p.order_id, a.token, p.snapshot, \(Self.stateColumns), p.occurred_at, p.attempts,
        p.expires_at, p.enqueued_at, p.user_id, p.correlation_id
      FROM pending p JOIN activities a ON a.order_id = p.order_id
      WHERE a.token IS NOT NULL AND p.not_before <= ?
        AND (a.sending_until IS NULL OR a.sending_until < ? OR a.sender = ?)
      ORDER BY p.not_before LIMIT ?
      """, now, now, sender, limit
    )
    .map { row in
      DueUpdate(
        orderId: try row.string(0), userId: try row.string(13), token: try row.string(1),
        snapshot: try JSON.read(TrackingSnapshot.self, from: Data(try row.string(2).utf8)),
        // Columns 3…8 are the state's.
        state: try Self.state(row, from: 3), occurredAt: Date(timeIntervalSince1970: try row.double(9)),
        enqueuedAt: Date(timeIntervalSince1970: try row.double(12)), attempts: try row.int(10),
        expiresAt: Date(timeIntervalSince1970: try row.double(11)), correlationID: try row.optionalString(14))
    }
  }

  /// Claims the activities of `orderIds` for `sender` until `until`: no other sender takes their
  /// updates meanwhile, so an activity's pushes go one at a time, each decided on the state the
  /// last one left.
  public func claimActivities(_ orderIds: [String], sender: String, until: Date, in db: any SQLConnection)
    throws
  {
    for chunk in Self.chunks(orderIds) {
      try db.execute(
        "UPDATE activities SET sender = ?, sending_until = ? WHERE order_id IN \(Self.list(chunk.count))",
        bindings: [sender, until.timeIntervalSince1970] + chunk)
    }
  }

  /// Lets `sender`'s claim on the activity go (its push is recorded).
  public func releaseActivity(_ orderId: String, sender: String, in db: any SQLConnection) throws {
    try db.execute(
      "UPDATE activities SET sending_until = NULL WHERE order_id = ? AND sender = ?", orderId, sender)
  }

  /// An activity near its eight hours: not ended, with a token and something shown.
  public struct AgingActivity: Sendable, Hashable {
    public var orderId: String
    public var userId: String
    public var token: String
    public var state: ActivityState
  }

  /// Activities started in (`startedAfter`, `startedBefore`], not ended, with a token and shown
  /// content and no update pending (that one ends them), that `sender` may claim at `now`.
  public func agingActivities(
    startedBefore: Date, startedAfter: Date, at now: Date, limit: Int, sender: String,
    in db: any SQLConnection
  ) throws -> [AgingActivity] {
    let now = now.timeIntervalSince1970
    return try db.query(
      """
      SELECT a.order_id, a.user_id, a.token, \(Self.stateColumns) FROM activities a
      WHERE a.ended = 0 AND a.token IS NOT NULL AND a.shown IS NOT NULL AND a.started_at <= ? AND a.started_at > ?
        AND (a.sending_until IS NULL OR a.sending_until < ? OR a.sender = ?)
        AND NOT EXISTS (SELECT 1 FROM pending p WHERE p.order_id = a.order_id)
      ORDER BY a.started_at LIMIT ?
      """, startedBefore.timeIntervalSince1970, startedAfter.timeIntervalSince1970, now, sender, limit
    ).map { row in
      AgingActivity(
        orderId: try row.string(0), userId: try row.string(1), token: try row.string(2),
        state: try Self.state(row, from: 3))
    }
  }

  // MARK: - Push-to-start

  /// Waits until `dueAt` to see whether the order's app starts its activity itself.
  public func scheduleStart(
    _ orderId: String, user: String, hub: String, dueAt: Date, correlationID: String?,
    in db: any SQLConnection
  ) throws {
    try db.execute(
      """
      INSERT INTO starts (order_id, user_id, hub, due_at, correlation_id) VALUES (?, ?, ?, ?, ?)
      ON CONFLICT (order_id) DO NOTHING
      """, orderId, user, hub, dueAt.timeIntervalSince1970, correlationID)
  }

  /// An order whose wait for its app's own activity is over.
  public struct DueStart: Sendable, Hashable {
    public var orderId: String
    public var userId: String
    public var hub: String
    public var correlationID: String?
    /// The order has an activity (the app sent its token meanwhile).
    public var hasActivity = false
    /// The user's devices with a start token, and when each was last started.
    public var devices: [StartDevice] = []
    /// The newest update waiting for the activity, if one came.
    public var snapshot: TrackingSnapshot?
  }

  public struct StartDevice: Sendable, Hashable {
    public var token: String
    public var startToken: String
    public var recentStarts: [Date]
  }

  /// Orders due at `now` that `sender` may claim, with what deciding their start needs.
  public func dueStarts(at now: Date, limit: Int, sender: String, in db: any SQLConnection) throws
    -> [DueStart]
  {
    let at = now.timeIntervalSince1970
    let due = try db.query(
      """
      SELECT s.order_id, s.user_id, s.hub, s.correlation_id FROM starts s
      WHERE s.due_at <= ? AND (s.sending_until IS NULL OR s.sending_until < ? OR s.sender = ?)
        AND NOT EXISTS (
          SELECT 1 FROM devices d WHERE d.user_id = s.user_id AND d.start_sending_until >= ? AND d.start_sender <> ?)
      ORDER BY s.due_at LIMIT ?
      """, at, at, sender, at, sender, limit
    ).map {
      DueStart(
        orderId: try $0.string(0), userId: try $0.string(1), hub: try $0.string(2),
        correlationID: try $0.optionalString(3))
    }
    return try due.map { start in
      var start = start
      start.hasActivity = try db.queryOne("SELECT 1 FROM activities WHERE order_id = ?", start.orderId) != nil
      start.devices = try db.query(
        "SELECT token, start_token, start_times FROM devices WHERE user_id = ? AND start_token IS NOT NULL ORDER BY token",
        start.userId
      ).map {
        StartDevice(
          token: try $0.string(0), startToken: try $0.string(1),
          recentStarts: try Self.times($0.optionalString(2)))
      }
      start.snapshot = try db.queryOne("SELECT snapshot FROM pending WHERE order_id = ?", start.orderId).map {
        try JSON.read(TrackingSnapshot.self, from: Data(try $0.string(0).utf8))
      }
      return start
    }
  }

  /// Claims `starts` for `sender` until `until`, and their customers' devices with them: another
  /// sender takes none of those customers' starts meanwhile (writing the devices makes a replica
  /// that claims one of them at the same moment conflict and look again).
  public func claimStarts(_ starts: [DueStart], sender: String, until: Date, in db: any SQLConnection) throws
  {
    for chunk in Self.chunks(starts.map(\.orderId)) {
      try db.execute(
        "UPDATE starts SET sender = ?, sending_until = ? WHERE order_id IN \(Self.list(chunk.count))",
        bindings: [sender, until.timeIntervalSince1970] + chunk)
    }
    for chunk in Self.chunks(Array(Set(starts.map(\.userId))).sorted()) {
      try db.execute(
        "UPDATE devices SET start_sender = ?, start_sending_until = ? WHERE user_id IN \(Self.list(chunk.count))",
        bindings: [sender, until.timeIntervalSince1970] + chunk)
    }
  }

  /// The start was decided: the order waits no more.
  public func finishStart(_ orderId: String, in db: any SQLConnection) throws {
    try db.execute("DELETE FROM starts WHERE order_id = ?", orderId)
  }

  /// Lets `sender`'s claim on the customer's devices go (their starts are recorded).
  public func releaseStartClaim(user: String, sender: String, in db: any SQLConnection) throws {
    try db.execute(
      "UPDATE devices SET start_sending_until = NULL WHERE user_id = ? AND start_sender = ?", user, sender)
  }

  /// Tries the start again at `at` (no answer from APNs).
  public func retryStart(_ orderId: String, at: Date, in db: any SQLConnection) throws {
    try db.execute(
      "UPDATE starts SET due_at = ?, sending_until = NULL WHERE order_id = ?", at.timeIntervalSince1970,
      orderId)
  }

  /// The times of the device's recent starts (its budget's window).
  public func saveStartTimes(_ times: [Date], device token: String, in db: any SQLConnection) throws {
    try db.execute("UPDATE devices SET start_times = ? WHERE token = ?", Self.text(times), token)
  }

  /// An alert for one device of `user`, due at `now`.
  public func queueAlert(
    _ text: AlertText, device token: String, user: String, orderId: String, occurredAt: Date,
    correlationID: String?, at now: Date, expiresAt: Date, in db: any SQLConnection
  ) throws {
    try db.execute(
      """
      INSERT INTO alerts (token, user_id, order_id, title, body, occurred_at, not_before, expires_at, correlation_id)
      VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
      """, token, user, orderId, text.title, text.body, occurredAt.timeIntervalSince1970,
      now.timeIntervalSince1970,
      expiresAt.timeIntervalSince1970, correlationID)
  }

  /// Forgets a device's start token if it is still `startToken` (APNs said it is gone).
  public func forgetStartToken(_ startToken: String, device token: String, in db: any SQLConnection) throws {
    try db.execute(
      "UPDATE devices SET start_token = NULL WHERE token = ? AND start_token = ?", token, startToken)
  }

  // MARK: - Hub notices

  /// Stores a new notice, due for broadcast at once; returns how many notices the hub has had
  /// (its event's sequence).
  public func insertNotice(_ notice: HubNotice, correlationID: String?, in db: any SQLConnection) throws
    -> Int64
  {
    // The hub's next sequence: replicas racing for one collide on the unique index and the
    // transaction is tried again (or fails), never two notices with one sequence.
    let sequence =
      (try db.queryOne("SELECT max(sequence) FROM notices WHERE hub = ?", notice.hub)?.optionalInt64(0) ?? 0)
      + 1
    try db.execute(
      """
      INSERT INTO notices (notice_id, hub, title, body, posted_at, expires_at, sequence, not_before, correlation_id)
      VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
      """, notice.noticeId, notice.hub, notice.title, notice.body, notice.postedAt.timeIntervalSince1970,
      notice.expiresAt.timeIntervalSince1970, sequence, notice.postedAt.timeIntervalSince1970, correlationID)
    return sequence
  }

  /// The hub's newest notice if it still shows at `now` (a newer one replaced any older), and
  /// the hub's channel.
  public func currentNotice(hub: String, at now: Date) throws -> (notice: HubNotice?, channelID: String?) {
    try database.read { db in
      let newest = try db.queryOne(
        "SELECT \(Self.noticeColumns) FROM notices WHERE hub = ? ORDER BY sequence DESC LIMIT 1", hub
      ).map(Self.notice(from:))
      return (newest.flatMap { $0.isCurrent(at: now) ? $0 : nil }, try self.channel(hub: hub, in: db))
    }
  }

  /// A notice waiting to be broadcast, with its attempts so far.
  public struct DueNotice: Sendable, Hashable {
    public var notice: HubNotice
    public var attempts: Int
    public var correlationID: String?
    /// The hub's channel (nil: none created yet).
    public var channelID: String?
  }

  /// Notices due for broadcast at `now` that `sender` may claim, oldest first.
  public func dueNotices(at now: Date, limit: Int, sender: String, in db: any SQLConnection) throws
    -> [DueNotice]
  {
    let at = now.timeIntervalSince1970
    return try db.query(
      """
      SELECT n.notice_id, n.hub, n.title, n.body, n.posted_at, n.expires_at, n.attempts, n.correlation_id, c.channel_id
      FROM notices n LEFT JOIN channels c ON c.hub = n.hub
      WHERE n.state = 'pending' AND n.not_before <= ?
        AND (n.sending_until IS NULL OR n.sending_until < ? OR n.sender = ?)
      ORDER BY n.not_before LIMIT ?
      """, at, at, sender, limit
    ).map {
      DueNotice(
        notice: try Self.notice(from: $0), attempts: try $0.int(6), correlationID: try $0.optionalString(7),
        channelID: try $0.optionalString(8))
    }
  }

  public func claimNotices(_ ids: [String], sender: String, until: Date, in db: any SQLConnection) throws {
    for chunk in Self.chunks(ids) {
      try db.execute(
        "UPDATE notices SET sender = ?, sending_until = ? WHERE notice_id IN \(Self.list(chunk.count))",
        bindings: [sender, until.timeIntervalSince1970] + chunk)
    }
  }

  /// The broadcast of `id` ended: `sent` or `failed`.
  public func finishNotice(_ id: String, state: String, in db: any SQLConnection) throws {
    try db.execute("UPDATE notices SET state = ?, sending_until = NULL WHERE notice_id = ?", state, id)
  }

  /// One more attempt of `id`, due again at `at`.
  public func retryNotice(_ id: String, at: Date, in db: any SQLConnection) throws {
    try db.execute(
      "UPDATE notices SET attempts = attempts + 1, not_before = ?, sending_until = NULL WHERE notice_id = ?",
      at.timeIntervalSince1970, id)
  }

  /// The hub's APNs channel, if one was created.
  public func channel(hub: String, in db: any SQLConnection) throws -> String? {
    try db.queryOne("SELECT channel_id FROM channels WHERE hub = ?", hub)?.string(0)
  }

  /// Keeps the hub's channel (the first one kept stays: replicas racing keep one).
  public func saveChannel(_ channelID: String, hub: String, at now: Date, in db: any SQLConnection) throws {
    try db.execute(
      "INSERT INTO channels (hub, channel_id, created_at) VALUES (?, ?, ?) ON CONFLICT (hub) DO NOTHING", hub,
      channelID, now.timeIntervalSince1970)
  }

  /// Forgets the hub's channel if it is still `channelID` (APNs no longer knows it): the next
  /// broadcast makes a new one.
  public func forgetChannel(_ channelID: String, hub: String, in db: any SQLConnection) throws {
    try db.execute("DELETE FROM channels WHERE hub = ? AND channel_id = ?", hub, channelID)
  }

  static let noticeColumns = "notice_id, hub, title, body, posted_at, expires_at"

  static func notice(from row: SQLRow) throws -> HubNotice {
    HubNotice(
      noticeId: try row.string(0), hub: try row.string(1), title: try row.string(2), body: try row.string(3),
      postedAt: Date(timeIntervalSince1970: try row.double(4)),
      expiresAt: Date(timeIntervalSince1970: try row.double(5)))
  }

  /// A queued alert for one device.
  public struct DueAlert: Sendable, Hashable {
    public enum Kind: Sendable, Hashable {
      case alert
      case refresh(status: String)
    }

    public var seq: Int64
    public var token: String
    public var orderId: String
    public var userId: String
    public var text: AlertText
    /// An alert, or a finished order's background push (`refresh`, with the order's status).
    public var kind: Kind
    public var occurredAt: Date
    public var attempts: Int
    public var expiresAt: Date
    /// The request id that caused the alert.
    public var correlationID: String?
  }

  /// Queued alerts due at `now` (tests, operators; `DeliveryEngine` claims what it sends).
  public func dueAlerts(at now: Date, limit: Int) throws -> [DueAlert] {
    try database.read { try self.dueAlerts(at: now, limit: limit, sender: "", in: $0) }
  }

  /// Queued alerts due at `now` whose device still belongs to the alert's user and that `sender`
  /// may send (no other sender's claim holds at `now`), oldest first.
  public func dueAlerts(at now: Date, limit: Int, sender: String, in db: any SQLConnection) throws
    -> [DueAlert]
  {
    let now = now.timeIntervalSince1970
    return try db.query(
      """
      SELECT a.seq, a.token, a.order_id, a.title, a.body, a.occurred_at, a.attempts, a.expires_at, a.user_id,
        a.correlation_id, a.kind, a.status
      FROM alerts a
      JOIN devices d ON d.token = a.token AND d.user_id = a.user_id
      WHERE a.not_before <= ? AND (a.sending_until IS NULL OR a.sending_until < ? OR a.sender = ?)
      ORDER BY a.not_before, a.seq LIMIT ?
      """, now, now, sender, limit
    )
    .map {
      DueAlert(
        seq: try $0.int64(0), token: try $0.string(1), orderId: try $0.string(2),
        userId: try $0.optionalString(8) ?? "",
        text: AlertText(title: try $0.string(3), body: try $0.string(4)),
        kind: try $0.string(10) == "refresh" ? .refresh(status: try $0.optionalString(11) ?? "") : .alert,
        occurredAt: Date(timeIntervalSince1970: try $0.double(5)), attempts: try $0.int(6),
        expiresAt: Date(timeIntervalSince1970: try $0.double(7)), correlationID: try $0.optionalString(9))
    }
  }

  /// Claims the alerts `seqs` for `sender` until `until`: no other sender sends them meanwhile.
  public func claimAlerts(_ seqs: [Int64], sender: String, until: Date, in db: any SQLConnection) throws {
    for chunk in Self.chunks(seqs) {
      try db.execute(
        "UPDATE alerts SET sender = ?, sending_until = ? WHERE seq IN \(Self.list(chunk.count))",
        bindings: [sender, until.timeIntervalSince1970] + chunk)
    }
  }

  /// `(?, ?, …)` for `count` values.
  private static func list(_ count: Int) -> String {
    "(" + Array(repeating: "?", count: count).joined(separator: ", ") + ")"
  }

  /// `values` in pieces small enough to bind in one statement on either engine.
  private static func chunks<Value: SQLBindable>(_ values: [Value]) -> [[any SQLBindable]] {
    SQLRuns.ranges(values.count, largest: 256).map { Array(values[$0]) }
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

  /// Deletes updates and alerts no longer worth sending at `now` (the SQL form of
  /// `PushDelivery.isWorthSending`), and alerts whose device now belongs to another user.
  /// Returns how many rows went.
  public func deleteUndeliverable(at now: Date, in db: any SQLConnection) throws -> Int {
    try db.execute("DELETE FROM pending WHERE expires_at <= ?", now.timeIntervalSince1970)
    var removed = db.changes
    try db.execute(
      """
      DELETE FROM alerts WHERE expires_at <= ? OR NOT EXISTS (
        SELECT 1 FROM devices d WHERE d.token = alerts.token AND d.user_id = alerts.user_id)
      """, now.timeIntervalSince1970)
    removed += db.changes
    return removed
  }

  // MARK: - Outbox

  /// Puts an event in the outbox, sent after the commit by the relay.
  public func append(_ message: OutgoingMessage, in db: any SQLConnection) throws {
    try Outbox.append(message, in: db)
  }

  // MARK: - Inbox

  /// Claims `messageID` for `consumer`; false if it was processed before.
  public func claim(messageID: String, consumer: String, at now: Date, in db: any SQLConnection) throws
    -> Bool
  {
    try Inbox.claim(messageID: messageID, consumer: consumer, at: now, in: db)
  }

  /// Forgets inbox entries processed before `cutoff`.
  @discardableResult
  public func purgeInbox(olderThan cutoff: Date) throws -> Int {
    try database.write { try Inbox.purge(olderThan: cutoff, in: $0) }
  }

  /// An activity's state as `state(_:from:)` reads it (five columns of `activities a`).
  static let stateColumns = "a.last_version, a.shown, a.ended, a.high_times, a.started_at, a.last_timestamp"

  static func state(_ row: SQLRow, from first: Int) throws -> ActivityState {
    var state = ActivityState(startedAt: Date(timeIntervalSince1970: try row.double(first + 4)))
    state.lastVersion = try row.int64(first)
    state.shown = try row.optionalString(first + 1).map {
      try JSON.read(LiveActivityContent.self, from: Data($0.utf8))
    }
    state.ended = try row.bool(first + 2)
    state.highPriorityTimes = try times(row.optionalString(first + 3))
    state.lastTimestamp = try row.int(first + 5)
    return state
  }

  static func times(_ text: String?) throws -> [Date] {
    guard let text else { return [] }
    var reader = JSONReader(Array(text.utf8))
    var times: [Date] = []
    try reader.readArray { times.append(Date(timeIntervalSince1970: try $0.readDouble())) }
    try reader.finish()
    return times
  }

  static func text(_ times: [Date]) -> String {
    "[" + times.map { String($0.timeIntervalSince1970) }.joined(separator: ",") + "]"
  }

  /// Pending updates (tests, the load tool).
  public func pendingCount() throws -> Int {
    try database.read { try $0.queryOne("SELECT count(*) FROM pending")?.int(0) ?? 0 }
  }
}
