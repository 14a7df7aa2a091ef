import Foundation
import GrocerContracts
import GrocerCore
import GrocerStorage

/// TrackingService's use cases, one method per intent: each opens one transaction on the store,
/// loads the order, asks Domain what the change is, and records the new version with its
/// `tracking.updated` (or `liveActivity.token`) in the outbox in that transaction, so events
/// leave in version order per order. The HTTP controller and the `order.confirmed` consumer call
/// these; neither decides.
///
/// Synchronous and blocking, like the store: writes are called on `database.onWriterQueue`,
/// reads through `runBlocking`. `replies` learns of every committed version after its commit.
public final class TrackingCommands: Sendable {
  public let store: TrackingStore
  /// The newest snapshot per order, for answering polls from memory.
  public let replies: TrackingReplyCache
  /// The open tracking streams, told of every committed version.
  public let streams: TrackingStreams
  /// The hubs' current notices, which replies and streams carry.
  public let notices: HubNotices
  private let clock: any WallClock
  private let ids: any IDGenerator
  private let eta: ETAModel
  /// The events' `source` (the service's name).
  private let source: String

  public init(
    store: TrackingStore, clock: any WallClock, ids: any IDGenerator, eta: ETAModel = ETAModel(),
    source: String = TrackingEventType.source, notices: HubNotices = HubNotices()
  ) {
    self.store = store
    self.notices = notices
    self.replies = TrackingReplyCache(notices: notices)
    self.streams = TrackingStreams(notices: notices)
    self.clock = clock
    self.ids = ids
    self.eta = eta
    self.source = source
  }

  // MARK: - Reading

  /// The order's tracking, remembered for the polls that follow.
  public func record(_ orderId: String) throws -> TrackingRecord? {
    let record = try store.record(orderId)
    if let record { replies.remember(record) }
    return record
  }

  /// `user`'s orders that are running, or finished at or after `finishedSince`, oldest first.
  public func active(user: String, finishedSince: Date) throws -> [TrackingRecord] {
    try store.active(user: user, finishedSince: finishedSince)
  }

  // MARK: - Use cases

  /// `order.confirmed`: starts the order's tracking at `placed`, version 1, with an ETA (once per
  /// message id; an order that has tracking already is left alone). True if it was started.
  @discardableResult
  public func startTracking(
    _ order: OrderConfirmed, messageID: String, consumer: String, correlationID: String?
  ) throws -> Bool {
    let now = clock.now()
    let store = self.store
    return try store.database.write { db in
      guard try store.claim(messageID: messageID, consumer: consumer, at: now, in: db) else { return false }
      guard try !store.exists(order.orderId, in: db) else { return false }
      let record = TrackingRecord.started(order, at: now, eta: self.eta)
      try store.insert(record, in: db)
      try self.publish(
        record, changed: TrackingRecord.startChanges, previous: .placed, correlationID: correlationID, in: db)
      self.rememberAfterCommit(record)
      return true
    }
  }

  /// Moves `orderId`'s stage by `command`. `authorize` sees the current record inside the
  /// transaction and throws to refuse (`TrackingAccess.mayMove`).
  public func move(
    _ orderId: String, by command: TrackingCommand, correlationID: String?,
    authorize: (TrackingRecord) throws -> Void = { _ in }
  ) throws -> TrackingRevision {
    try change(orderId, correlationID: correlationID) { current, now in
      try authorize(current)
      return try current.moved(by: command, at: now)
    }
  }

  /// A fix of the assigned rider: unchanged unless newer than the one held.
  public func recordFix(
    for orderId: String, lat: Double, lng: Double, recordedAt: Date, correlationID: String?,
    authorize: (TrackingRecord) throws -> Void = { _ in }
  ) throws -> TrackingRevision {
    try change(orderId, correlationID: correlationID) { current, _ in
      try authorize(current)
      return try current.withFix(lat: lat, lng: lng, recordedAt: recordedAt)
    }
  }

  /// Recomputes the ETA of running orders whose range ends before `now + margin` (a late rider
  /// with no new fix), one transaction each: the range moves forward, never showing a past time.
  /// Returns how many moved.
  @discardableResult
  public func refreshLateETAs(margin: TimeInterval = 60, limit: Int = 500) throws -> Int {
    let late = try store.running(etaEndingBefore: clock.now() + margin, limit: limit)
    var moved = 0
    for orderId in late {
      if case .changed = try change(orderId, correlationID: nil, { current, _ in current }) { moved += 1 }
    }
    return moved
  }

  /// Registers (or replaces) the order's Live Activity push token and publishes
  /// `liveActivity.token`. `authorize` sees the current record inside the transaction
  /// (`TrackingAccess.mayRegisterToken`). Returns false when it was already that token.
  @discardableResult
  public func setLiveActivityToken(
    _ token: String, for orderId: String, correlationID: String?,
    authorize: (TrackingRecord) throws -> Void = { _ in }
  ) throws -> Bool {
    let now = clock.now()
    let store = self.store
    return try store.database.write { db in
      guard let record = try store.record(orderId, in: db) else { throw TrackingError.notFound(orderId) }
      try authorize(record)
      guard record.takesLiveActivityToken(token) else {
        self.rememberAfterCommit(record)
        return false
      }
      var registered = record
      registered.liveActivityToken = token
      registered.liveActivity = record.liveActivity.restarted()
      let version = try store.liveActivityTokenVersion(orderId, in: db) + 1
      try store.setLiveActivityToken(
        token, version: version, delivery: registered.liveActivity, for: orderId, in: db)
      self.rememberAfterCommit(registered)
      let payload = LiveActivityToken(orderId: orderId, userId: record.userId, hub: record.hub, token: token)
      try store.append(
        try EventEnvelope(
          id: self.ids.next(), type: TrackingEventType.liveActivityToken, occurredAt: now,
          source: self.source, correlationId: correlationID, subject: EventSubject.liveActivity(orderId),
          sequence: version,
          payload: payload), in: db)
      return true
    }
  }

  /// `push.delivered` / `push.failed` of the order's Live Activity (once per message id): what
  /// the lock screen shows moves on, when the outcome is for its current token and not older than
  /// the last one applied. True if it changed anything.
  @discardableResult
  public func recordPushOutcome(_ outcome: PushOutcome, messageID: String, consumer: String) throws -> Bool {
    let now = clock.now()
    let store = self.store
    return try store.database.write { db in
      guard try store.claim(messageID: messageID, consumer: consumer, at: now, in: db),
        var record = try store.record(outcome.orderId, in: db),
        let next = record.liveActivity.applying(outcome, currentToken: record.liveActivityToken)
      else { return false }
      try store.saveDelivery(next, for: record.orderId, in: db)
      record.liveActivity = next
      self.rememberAfterCommit(record)
      return true
    }
  }

  /// `hub.notice` (once per message id): kept as its hub's notice if newer than the one held,
  /// so a restart shows it again. True if it was taken.
  @discardableResult
  public func recordNotice(_ notice: HubNotice, sequence: Int64, messageID: String, consumer: String) throws
    -> Bool
  {
    let now = clock.now()
    let (store, notices) = (self.store, self.notices)
    return try store.database.write { db in
      guard try store.claim(messageID: messageID, consumer: consumer, at: now, in: db),
        try store.saveNotice(notice, sequence: sequence, in: db)
      else { return false }
      let (streams, clock) = (self.streams, self.clock)
      store.database.afterCommit {
        if notices.take(notice, sequence: sequence) {
          streams.noticeChanged(hub: notice.hub, at: clock.now())
        }
      }
      return true
    }
  }

  /// Loads the hubs' notices kept in the database (at start).
  public func loadNotices() throws {
    for (notice, sequence) in try store.notices() { notices.take(notice, sequence: sequence) }
    notices.markLoaded()
  }

  /// The snapshot as the app reads it now, with the lock screen's state and the hub's notice.
  public func reply(_ record: TrackingRecord) -> TrackingSnapshot {
    record.reply(at: clock.now(), notices: notices)
  }

  /// Forgets inbox entries processed more than `retention` ago (longer than the broker could
  /// redeliver them).
  @discardableResult
  public func purgeInbox(retention: TimeInterval = 7 * 86_400) throws -> Int {
    try store.purgeInbox(olderThan: clock.now() - retention)
  }

  // MARK: - Helpers

  /// One change: `make` returns the record after the change (nil: nothing to do); Domain decides
  /// whether it is a new version, which is saved with its `tracking.updated`.
  private func change(
    _ orderId: String, correlationID: String?, _ make: (TrackingRecord, Date) throws -> TrackingRecord?
  ) throws -> TrackingRevision {
    let now = clock.now()
    let store = self.store
    return try store.database.write { db in
      guard let current = try store.record(orderId, in: db) else { throw TrackingError.notFound(orderId) }
      let revision = TrackingRevision.revise(current, to: try make(current, now), at: now, eta: self.eta)
      guard case .changed(let next, let changed) = revision else { return revision }
      try store.save(next, in: db)
      try self.publish(
        next, changed: changed, previous: current.state.status, correlationID: correlationID, in: db)
      self.rememberAfterCommit(next)
      return revision
    }
  }

  private func rememberAfterCommit(_ record: TrackingRecord) {
    let (replies, streams, clock) = (self.replies, self.streams, self.clock)
    store.database.afterCommit {
      replies.remember(record)
      streams.publish(record, at: clock.now())
    }
  }

  private func publish(
    _ record: TrackingRecord, changed: [TrackingChange], previous: TrackingStatus, correlationID: String?,
    in db: any SQLConnection
  ) throws {
    // Written by hand in one pass (no encoder): this runs on the writer for every fix.
    try store.append(
      EventEnvelope.message(
        id: ids.next(), type: TrackingEventType.updated, occurredAt: record.generatedAt,
        source: source, correlationId: correlationID, subject: EventSubject.tracking(record.orderId),
        sequence: record.version, payloadJSON: record.update(changed: changed, previous: previous).jsonBytes),
      in: db)
  }
}
