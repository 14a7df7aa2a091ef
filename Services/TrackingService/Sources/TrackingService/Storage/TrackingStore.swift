import Foundation
import GrocerContracts
import GrocerCore
import GrocerStorage

/// TrackingService's database, SQL only: one row per order, read and written inside the
/// transaction a use case (`TrackingCommands`) opens, with the inbox and outbox beside it.
///
/// Synchronous and blocking: async callers go through `database.onWriterQueue` (writes) or
/// `runBlocking` (reads).
public final class TrackingStore: Sendable {
  public let database: any SQLDatabase

  public init(database: any SQLDatabase) {
    self.database = database
  }

  // MARK: - Reading

  /// The order's tracking as stored, in a read transaction of its own.
  public func record(_ orderId: String) throws -> TrackingRecord? {
    try database.read { try self.record(orderId, in: $0) }
  }

  /// `user`'s orders that are running, or finished at or after `finishedSince`, oldest first.
  public func active(user: String, finishedSince: Date) throws -> [TrackingRecord] {
    try database.read { db in
      try db.query(
        "SELECT \(Self.columns) FROM tracking WHERE user_id = ? AND (finished_at IS NULL OR finished_at >= ?) ORDER BY placed_at, order_id",
        user, finishedSince.timeIntervalSince1970
      ).map(Self.record(from:))
    }
  }

  /// Running orders whose ETA range ends before `cutoff`, soonest first, at most `limit`.
  public func running(etaEndingBefore cutoff: Date, limit: Int) throws -> [String] {
    try database.read { db in
      try db.query(
        "SELECT order_id FROM tracking WHERE finished_at IS NULL AND eta_latest < ? ORDER BY eta_latest LIMIT ?",
        cutoff.timeIntervalSince1970, limit
      ).map { try $0.string(0) }
    }
  }

  /// Whether the order has tracking already.
  public func exists(_ orderId: String, in db: any SQLConnection) throws -> Bool {
    try db.queryOne("SELECT 1 FROM tracking WHERE order_id = ?", orderId) != nil
  }

  // MARK: - Writing

  /// Inserts a new order's row: placed, version 1, at `record.generatedAt`.
  public func insert(_ record: TrackingRecord, in db: any SQLConnection) throws {
    try db.execute(
      """
      INSERT INTO tracking (order_id, user_id, hub, status, dest_lat, dest_lng, eta_earliest, eta_latest, version,
        generated_at, placed_at, stage_since)
      VALUES (?, ?, ?, 'placed', ?, ?, ?, ?, 1, ?, ?, ?)
      """, record.orderId, record.userId, record.hub, record.destination?.lat, record.destination?.lng,
      record.eta?.earliest.timeIntervalSince1970, record.eta?.latest.timeIntervalSince1970,
      record.generatedAt.timeIntervalSince1970, record.placedAt.timeIntervalSince1970,
      record.stageSince.timeIntervalSince1970)
  }

  /// The sequence of the order's `liveActivity.token` events so far.
  public func liveActivityTokenVersion(_ orderId: String, in db: any SQLConnection) throws -> Int64 {
    try db.queryOne("SELECT la_token_version FROM tracking WHERE order_id = ?", orderId)!.int64(0)
  }

  /// Stores the order's Live Activity token with its event's sequence, and `delivery` (a new
  /// activity's).
  public func setLiveActivityToken(
    _ token: String, version: Int64, delivery: LiveActivityDelivery, for orderId: String,
    in db: any SQLConnection
  ) throws {
    try db.execute(
      "UPDATE tracking SET la_token = ?, la_token_version = ? WHERE order_id = ?", token, version, orderId)
    try saveDelivery(delivery, for: orderId, in: db)
  }

  /// Stores what is known of the order's Live Activity on the lock screen.
  public func saveDelivery(_ delivery: LiveActivityDelivery, for orderId: String, in db: any SQLConnection)
    throws
  {
    try db.execute(
      """
      UPDATE tracking SET la_pushed_at = ?, la_stale_at = ?, la_ended = ?, la_failed_at = ?, la_gone = ?,
        la_outcome_at = ?, la_outcome_version = ?, la_revision = ?
      WHERE order_id = ?
      """, delivery.lastPushAt?.timeIntervalSince1970, delivery.staleAt?.timeIntervalSince1970,
      delivery.ended, delivery.failedAt?.timeIntervalSince1970, delivery.tokenGone,
      delivery.lastOutcomeAt?.timeIntervalSince1970, delivery.lastOutcomeVersion, delivery.revision, orderId)
  }

  /// Keeps `notice` as its hub's if its sequence is higher than the one kept; true if it was.
  public func saveNotice(_ notice: HubNotice, sequence: Int64, in db: any SQLConnection) throws -> Bool {
    try db.execute(
      """
      INSERT INTO hub_notices (hub, notice_id, title, body, posted_at, expires_at, sequence)
      VALUES (?, ?, ?, ?, ?, ?, ?)
      ON CONFLICT (hub) DO UPDATE SET notice_id = excluded.notice_id, title = excluded.title, body = excluded.body,
        posted_at = excluded.posted_at, expires_at = excluded.expires_at, sequence = excluded.sequence
      WHERE hub_notices.sequence < excluded.sequence
      """, notice.hub, notice.noticeId, notice.title, notice.body, notice.postedAt.timeIntervalSince1970,
      notice.expiresAt.timeIntervalSince1970, sequence)
    return db.changes > 0
  }

  /// Every hub's kept notice with its sequence.
  public func notices() throws -> [(HubNotice, Int64)] {
    try database.read { db in
      try db.query("SELECT hub, notice_id, title, body, posted_at, expires_at, sequence FROM hub_notices").map
      {
        (
          HubNotice(
            noticeId: try $0.string(1), hub: try $0.string(0), title: try $0.string(2),
            body: try $0.string(3),
            postedAt: Date(timeIntervalSince1970: try $0.double(4)),
            expiresAt: Date(timeIntervalSince1970: try $0.double(5))), try $0.int64(6)
        )
      }
    }
  }

  /// Claims `messageID` for `consumer` in the inbox; false if it was processed before.
  public func claim(messageID: String, consumer: String, at now: Date, in db: any SQLConnection) throws
    -> Bool
  {
    try Inbox.claim(messageID: messageID, consumer: consumer, at: now, in: db)
  }

  /// Puts an event in the outbox, sent after the commit by the relay.
  public func append(_ message: OutgoingMessage, in db: any SQLConnection) throws {
    try Outbox.append(message, in: db)
  }

  /// Puts an event in the outbox, encoded from its envelope.
  public func append(_ envelope: EventEnvelope, in db: any SQLConnection) throws {
    try Outbox.append(envelope, in: db)
  }

  /// Forgets inbox entries processed before `cutoff`.
  @discardableResult
  public func purgeInbox(olderThan cutoff: Date) throws -> Int {
    try database.write { try Inbox.purge(olderThan: cutoff, in: $0) }
  }

  /// Writes `record`'s changeable columns (stage, rider, fix, ETA, version, times).
  public func save(_ record: TrackingRecord, in db: any SQLConnection) throws {
    try db.execute(
      """
      UPDATE tracking SET status = ?, note = ?, resume_stage = ?, rider_id = ?, rider_name = ?, fix_lat = ?,
        fix_lng = ?, fix_recorded_at = ?, eta_earliest = ?, eta_latest = ?, version = ?, generated_at = ?,
        stage_since = ?, finished_at = ?
      WHERE order_id = ?
      """, record.state.status.rawValue, record.state.note, record.state.resumeStage?.rawValue,
      record.state.rider?.id, record.state.rider?.firstName, record.fix?.lat, record.fix?.lng,
      record.fix?.recordedAt.timeIntervalSince1970, record.eta?.earliest.timeIntervalSince1970,
      record.eta?.latest.timeIntervalSince1970, record.version, record.generatedAt.timeIntervalSince1970,
      record.stageSince.timeIntervalSince1970, record.finishedAt?.timeIntervalSince1970, record.orderId)
  }

  static let columns = """
    order_id, user_id, hub, status, note, resume_stage, rider_id, rider_name, fix_lat, fix_lng, fix_recorded_at,
    dest_lat, dest_lng, eta_earliest, eta_latest, version, generated_at, placed_at, stage_since, finished_at, la_token,
    la_pushed_at, la_stale_at, la_ended, la_failed_at, la_gone, la_outcome_at, la_outcome_version, la_revision
    """

  /// The order's tracking as stored, inside a transaction.
  public func record(_ orderId: String, in db: any SQLConnection) throws -> TrackingRecord? {
    try db.queryOne("SELECT \(Self.columns) FROM tracking WHERE order_id = ?", orderId).map(
      Self.record(from:))
  }

  private static func record(from row: SQLRow) throws -> TrackingRecord {
    func date(_ index: Int) throws -> Date? {
      try row.optionalDouble(index).map(Date.init(timeIntervalSince1970:))
    }
    let riderId = try row.optionalString(6)
    let rider = try riderId.map { AssignedRider(id: $0, firstName: try row.optionalString(7) ?? "") }
    let fix: (Double, Double, Date)? =
      if let lat = try row.optionalDouble(8), let lng = try row.optionalDouble(9), let at = try date(10) {
        (lat, lng, at)
      } else { nil }
    let destination: GeoPoint? =
      if let lat = try row.optionalDouble(11), let lng = try row.optionalDouble(12) {
        GeoPoint(lat: lat, lng: lng)
      } else { nil }
    let eta: ETARange? =
      if let earliest = try date(13), let latest = try date(14) {
        ETARange(earliest: earliest, latest: latest)
      } else {
        nil
      }
    return TrackingRecord(
      orderId: try row.string(0), userId: try row.string(1), hub: try row.string(2),
      state: TrackingState(
        status: TrackingStatus(rawValue: try row.string(3)) ?? .placed, note: try row.optionalString(4),
        resumeStage: try row.optionalString(5).flatMap(TrackingStatus.init(rawValue:)), rider: rider),
      fix: fix, destination: destination, eta: eta, version: try row.int64(15),
      generatedAt: try date(16) ?? Date(timeIntervalSince1970: 0),
      placedAt: try date(17) ?? Date(timeIntervalSince1970: 0),
      stageSince: try date(18) ?? Date(timeIntervalSince1970: 0), finishedAt: try date(19),
      liveActivityToken: try row.optionalString(20),
      liveActivity: try delivery(row, from: 21))
  }

  private static func delivery(_ row: SQLRow, from first: Int) throws -> LiveActivityDelivery {
    func date(_ index: Int) throws -> Date? {
      try row.optionalDouble(first + index).map(Date.init(timeIntervalSince1970:))
    }
    var delivery = LiveActivityDelivery()
    delivery.lastPushAt = try date(0)
    delivery.staleAt = try date(1)
    delivery.ended = try row.bool(first + 2)
    delivery.failedAt = try date(3)
    delivery.tokenGone = try row.bool(first + 4)
    delivery.lastOutcomeAt = try date(5)
    delivery.lastOutcomeVersion = try row.int64(first + 6)
    delivery.revision = try row.int64(first + 7)
    return delivery
  }
}
