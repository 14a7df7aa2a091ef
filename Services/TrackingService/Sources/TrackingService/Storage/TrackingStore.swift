import Foundation
import GrocerContracts
import GrocerCore
import GrocerStorage

/// One order's tracking as TrackingService keeps it.
public struct TrackingRecord: Sendable, Hashable {
  public var orderId: String
  public var userId: String
  public var hub: HubID
  public var state: TrackingState
  /// The newest fix of the assigned rider (nil before one arrived, and after a reassignment).
  public var fix: (lat: Double, lng: Double, recordedAt: Date)?
  public var destination: GeoPoint?
  public var eta: ETARange?
  public var version: Int64
  public var generatedAt: Date
  public var placedAt: Date
  public var stageSince: Date
  public var finishedAt: Date?
  public var liveActivityToken: String?

  public var riderView: RiderView? {
    guard let rider = state.rider, let fix else { return nil }
    return RiderView(firstName: rider.firstName, lat: fix.lat, lng: fix.lng, recordedAt: fix.recordedAt)
  }

  public var snapshot: TrackingSnapshot {
    TrackingSnapshot(
      orderId: orderId, version: version, status: state.status, problem: state.note, eta: eta,
      rider: riderView,
      destination: destination, generatedAt: generatedAt)
  }

  public static func == (lhs: TrackingRecord, rhs: TrackingRecord) -> Bool { lhs.snapshot == rhs.snapshot }
  public func hash(into hasher: inout Hasher) { hasher.combine(snapshot) }
}

/// TrackingService's database. Every accepted change raises `version` by one and appends its
/// `tracking.updated` in the same transaction, so events leave in version order per order.
///
/// Synchronous and blocking: async callers go through `database.onWriterQueue` (writes) or
/// `runBlocking` (reads).
public final class TrackingStore: Sendable {
  public let database: SQLiteDatabase
  private let clock: any WallClock
  private let ids: any IDGenerator
  private let eta: ETAModel
  /// The events' `source` (the service's name).
  private let source: String
  /// The newest snapshot per order, for answering polls from memory.
  public let replies = TrackingReplyCache()

  public init(
    database: SQLiteDatabase, clock: any WallClock, ids: any IDGenerator, eta: ETAModel = ETAModel(),
    source: String = TrackingEventType.source
  ) {
    self.database = database
    self.clock = clock
    self.ids = ids
    self.eta = eta
    self.source = source
  }

  // MARK: - Reading

  public func record(_ orderId: String) throws -> TrackingRecord? {
    let record = try database.read { try self.record(orderId, in: $0) }
    if let record { replies.remember(record) }
    return record
  }

  /// `user`'s orders that are running, or finished at or after `finishedSince`, oldest first.
  public func active(user: String, finishedSince: Date) throws -> [TrackingRecord] {
    try database.read { db in
      try db.query(
        "SELECT \(Self.columns) FROM tracking WHERE user_id = ? AND (finished_at IS NULL OR finished_at >= ?) ORDER BY placed_at",
        user, finishedSince.timeIntervalSince1970
      ).map(Self.record(from:))
    }
  }

  // MARK: - Creating

  /// `order.confirmed`: the snapshot at `placed`, version 1, with an ETA (once per message id;
  /// an order that has tracking already is left alone). True if it was created.
  @discardableResult
  public func create(
    _ order: OrderConfirmed, messageID: String, consumer: String, correlationID: String?
  ) throws -> Bool {
    let now = clock.now()
    return try database.write { db in
      guard try Inbox.claim(messageID: messageID, consumer: consumer, at: now, in: db) else { return false }
      guard try db.queryOne("SELECT 1 FROM tracking WHERE order_id = ?", order.orderId) == nil else {
        return false
      }
      let placedAt = min(order.placedAt, now)
      var record = TrackingRecord(
        orderId: order.orderId, userId: order.userId, hub: order.hub, state: .placed, fix: nil,
        destination: order.deliverTo, eta: nil, version: 1, generatedAt: now, placedAt: placedAt,
        stageSince: placedAt, finishedAt: nil, liveActivityToken: nil)
      record.eta = self.estimate(record, now: now)
      try db.execute(
        """
        INSERT INTO tracking (order_id, user_id, hub, status, dest_lat, dest_lng, eta_earliest, eta_latest, version,
          generated_at, placed_at, stage_since)
        VALUES (?, ?, ?, 'placed', ?, ?, ?, ?, 1, ?, ?, ?)
        """, record.orderId, record.userId, record.hub, record.destination?.lat, record.destination?.lng,
        record.eta?.earliest.timeIntervalSince1970, record.eta?.latest.timeIntervalSince1970,
        now.timeIntervalSince1970, placedAt.timeIntervalSince1970, placedAt.timeIntervalSince1970)
      try self.publish(
        record, changed: [.stage, .eta], previous: .placed, correlationID: correlationID, in: db)
      let (replies, created) = (self.replies, record)
      self.database.afterCommit { replies.remember(created) }
      return true
    }
  }

  // MARK: - Changes

  /// What a change request did.
  public enum Change: Sendable, Hashable {
    /// Accepted: a new version.
    case changed(TrackingRecord, [TrackingChange])
    /// Nothing to change (a repeated request, an older fix): the current snapshot.
    case unchanged(TrackingRecord)

    public var record: TrackingRecord {
      switch self {
      case .changed(let record, _), .unchanged(let record): record
      }
    }
  }

  /// Moves `orderId`'s stage by `command` (who may ask was checked by the caller).
  /// `authorize` sees the current record inside the transaction and throws to refuse.
  public func apply(
    _ command: TrackingCommand, to orderId: String, correlationID: String?,
    authorize: (TrackingRecord) throws -> Void = { _ in }
  ) throws -> Change {
    try change(orderId, correlationID: correlationID) { current, now in
      try authorize(current)
      switch TrackingMachine.apply(command, to: current.state) {
      case .failure(let illegal): throw TrackingError.illegal(illegal)
      case .success(nil): return nil
      case .success(let next?):
        var record = current
        record.state = next
        if next.stage != current.state.stage { record.stageSince = now }
        if next.rider != current.state.rider { record.fix = nil }
        if next.status.isTerminal { record.finishedAt = now }
        return record
      }
    }
  }

  /// A fix of the assigned rider: ignored (unchanged) unless newer than the one held.
  public func applyFix(
    to orderId: String, lat: Double, lng: Double, recordedAt: Date, correlationID: String?,
    authorize: (TrackingRecord) throws -> Void = { _ in }
  ) throws -> Change {
    try change(orderId, correlationID: correlationID) { current, _ in
      try authorize(current)
      guard !current.state.status.isTerminal else {
        throw TrackingError(.conflict, "orderFinished", "the order is \(current.state.status.rawValue)")
      }
      guard recordedAt >= current.placedAt - 60 else {
        throw TrackingError(.invalid, "fixTooOld", "`recordedAt` is before the order was placed")
      }
      if let held = current.fix, held.recordedAt >= recordedAt { return nil }
      var record = current
      record.fix = (lat, lng, recordedAt)
      return record
    }
  }

  /// Recomputes the ETA of running orders whose range ends before `now + margin` (a late rider
  /// with no new fix): the range moves forward, never showing a past time. Returns how many moved.
  @discardableResult
  public func refreshLateETAs(margin: TimeInterval = 60, limit: Int = 500) throws -> Int {
    let now = clock.now()
    let late = try database.read { db in
      try db.query(
        "SELECT order_id FROM tracking WHERE finished_at IS NULL AND eta_latest < ? ORDER BY eta_latest LIMIT ?",
        (now + margin).timeIntervalSince1970, limit
      ).map { try $0.string(0) }
    }
    var moved = 0
    for orderId in late {
      if case .changed = try change(orderId, correlationID: nil, { current, _ in current }) { moved += 1 }
    }
    return moved
  }

  /// Registers (or replaces) the order's Live Activity push token and publishes
  /// `liveActivity.token`. Returns false when it was already that token.
  @discardableResult
  public func setLiveActivityToken(_ token: String, for orderId: String, correlationID: String?) throws
    -> Bool
  {
    let now = clock.now()
    return try database.write { db in
      guard let record = try self.record(orderId, in: db) else { throw TrackingError.notFound(orderId) }
      guard record.liveActivityToken != token else { return false }
      let version =
        try db.queryOne("SELECT la_token_version FROM tracking WHERE order_id = ?", orderId)!.int64(0) + 1
      try db.execute(
        "UPDATE tracking SET la_token = ?, la_token_version = ? WHERE order_id = ?", token, version, orderId)
      let payload = LiveActivityToken(orderId: orderId, userId: record.userId, hub: record.hub, token: token)
      try Outbox.append(
        try EventEnvelope(
          id: self.ids.next(), type: TrackingEventType.liveActivityToken, occurredAt: now,
          source: source, correlationId: correlationID, subject: orderId, sequence: version,
          payload: payload), in: db)
      return true
    }
  }

  // MARK: - Helpers

  /// One change: `make` returns the record after the change (nil: nothing to do); the ETA is
  /// recomputed, and if anything a customer sees moved, the version rises and the event goes out.
  private func change(
    _ orderId: String, correlationID: String?, _ make: (TrackingRecord, Date) throws -> TrackingRecord?
  ) throws -> Change {
    let now = clock.now()
    return try database.write { db in
      guard let current = try self.record(orderId, in: db) else { throw TrackingError.notFound(orderId) }
      guard var next = try make(current, now) else { return .unchanged(current) }
      next.eta = self.estimate(next, now: now)
      var changed: [TrackingChange] = []
      if next.state.status != current.state.status || next.state.note != current.state.note {
        changed.append(.stage)
      }
      if next.eta != current.eta { changed.append(.eta) }
      if next.riderView != current.riderView { changed.append(.rider) }
      guard !changed.isEmpty || next.state != current.state else { return .unchanged(current) }
      next.version = current.version + 1
      next.generatedAt = now
      try self.save(next, in: db)
      try self.publish(
        next, changed: changed, previous: current.state.status, correlationID: correlationID, in: db)
      let (replies, committed) = (self.replies, next)
      self.database.afterCommit { replies.remember(committed) }
      return .changed(next, changed)
    }
  }

  private func estimate(_ record: TrackingRecord, now: Date) -> ETARange? {
    guard !record.state.status.isTerminal else { return nil }
    return eta.estimate(
      ETAModel.Input(
        stage: record.state.stage, stageSince: record.stageSince, fix: record.riderView,
        destination: record.destination), now: now)
  }

  private func publish(
    _ record: TrackingRecord, changed: [TrackingChange], previous: TrackingStatus, correlationID: String?,
    in db: SQLiteConnection
  ) throws {
    let payload = TrackingUpdated(
      userId: record.userId, hub: record.hub, snapshot: record.snapshot, changed: changed,
      previousStatus: previous)
    // Written by hand in one pass (no encoder): this runs on the writer for every fix.
    try Outbox.append(
      EventEnvelope.message(
        id: ids.next(), type: TrackingEventType.updated, occurredAt: record.generatedAt,
        source: source, correlationId: correlationID, subject: record.orderId,
        sequence: record.version, payloadJSON: payload.jsonBytes), in: db)
  }

  private func save(_ record: TrackingRecord, in db: SQLiteConnection) throws {
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
    dest_lat, dest_lng, eta_earliest, eta_latest, version, generated_at, placed_at, stage_since, finished_at, la_token
    """

  private func record(_ orderId: String, in db: SQLiteConnection) throws -> TrackingRecord? {
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
      liveActivityToken: try row.optionalString(20))
  }
}
