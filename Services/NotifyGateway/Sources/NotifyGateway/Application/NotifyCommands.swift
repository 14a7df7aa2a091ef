import Foundation
import GrocerContracts
import GrocerCore
import GrocerStorage

/// NotifyGateway's use cases apart from delivery (`DeliveryEngine`), one method per intent: each
/// opens one transaction on the store, claims the event's message id in the inbox (once per
/// message), asks Domain (`PendingUpdates`, `AlertText`) what to keep, and writes it. The
/// consumer and the HTTP controller call these; neither decides.
///
/// Synchronous and blocking, like the store: call writes on `database.onWriterQueue`.
public final class NotifyCommands: Sendable {
  public let store: NotifyStore
  private let clock: any WallClock
  /// How long a Live Activity update or an alert is worth delivering.
  let updateLifetime: TimeInterval
  /// How long a confirmed order's app has to start its Live Activity before the gateway starts
  /// it by push (nil: never).
  let startAfter: TimeInterval?
  private let noticeIDs = RandomIDs()
  private let eventIDs: any IDGenerator = TimeOrderedIDs()

  public init(
    store: NotifyStore, clock: any WallClock, updateLifetime: TimeInterval = 600,
    startAfter: TimeInterval? = nil
  ) {
    self.store = store
    self.clock = clock
    self.updateLifetime = updateLifetime
    self.startAfter = startAfter
  }

  // MARK: - Devices

  /// Registers `token` for `user` (a token moves to whoever registered it last).
  public func registerDevice(_ token: String, user: String) throws {
    let now = clock.now()
    try store.database.write { try store.registerDevice(token, user: user, at: now, in: $0) }
  }

  /// Removes `user`'s `token`; false if they had no such token.
  @discardableResult
  public func removeDevice(_ token: String, user: String) throws -> Bool {
    try store.database.write { try store.removeDevice(token, user: user, in: $0) }
  }

  public func devices(of user: String) throws -> [String] { try store.devices(of: user) }

  /// Sets (nil: removes) the push-to-start token of `user`'s device `token`; false if the device
  /// is not registered for them.
  @discardableResult
  public func setStartToken(_ startToken: String?, device token: String, user: String) throws -> Bool {
    try store.database.write { try store.setStartToken(startToken, device: token, user: user, in: $0) }
  }

  // MARK: - Consumed events (each once, by message id)

  /// `liveActivity.token`: the order's activity takes the token as `PendingUpdates.tokenChange`
  /// says, and what is pending for the order becomes due. False if the message was handled before.
  @discardableResult
  public func recordActivityToken(
    _ event: LiveActivityToken, sequence: Int64 = 1, messageID: String, consumer: String
  ) throws -> Bool {
    let now = clock.now()
    let store = self.store
    return try once(messageID, consumer, now) { db in
      let change = PendingUpdates.tokenChange(
        token: event.token, sequence: sequence, current: try store.activityToken(event.orderId, in: db))
      switch change {
      case .ignore: return
      case .start: try store.startActivity(event, sequence: sequence, at: now, in: db)
      case .replace:
        try store.replaceActivityToken(event.orderId, token: event.token, sequence: sequence, at: now, in: db)
      case .renumber: try store.renumberActivityToken(event.orderId, sequence: sequence, in: db)
      }
      if change.makesPendingDue { try store.makePendingDue(event.orderId, at: now, in: db) }
    }
  }

  /// `tracking.updated`: kept as the order's pending update if it is newer than the one pending
  /// (the older is coalesced) and than what was handled. A delivered order without a Live
  /// Activity gets an alert on the user's devices instead; a finished order, a background push.
  public func queueUpdate(
    _ update: TrackingUpdated, occurredAt: Date, correlationID: String? = nil, messageID: String,
    consumer: String
  ) throws -> PendingUpdates.Queued {
    let now = clock.now()
    let store = self.store
    var result = PendingUpdates.Queued.duplicate
    _ = try once(messageID, consumer, now) { db in
      let orderId = update.snapshot.orderId
      let (handled, pending) = try store.versions(orderId, in: db)
      if PendingUpdates.isHandled(version: update.snapshot.version, handled: handled?.version) {
        result = .stale
        return
      }
      result = PendingUpdates.queue(version: update.snapshot.version, pending: pending)
      guard result != .stale,
        try store.savePending(
          update, occurredAt: occurredAt, correlationID: correlationID, at: now,
          expiresAt: now + self.updateLifetime, in: db)
      else {
        result = .stale
        return
      }
      if let alert = PendingUpdates.alertInstead(
        of: update, hasActivity: handled?.hasToken ?? false, activityEnded: handled?.ended ?? false)
      {
        try store.queueAlert(
          alert, user: update.userId, orderId: orderId, occurredAt: occurredAt, correlationID: correlationID,
          at: now,
          expiresAt: now + self.updateLifetime, in: db)
      }
      if PendingUpdates.refreshesDevices(update) {
        try store.queueRefresh(
          orderId: orderId, status: update.snapshot.status, user: update.userId, occurredAt: occurredAt,
          correlationID: correlationID, at: now, expiresAt: now + self.updateLifetime, in: db)
      }
    }
    return result
  }

  /// `order.confirmed`, once per message id: the alert on every device of the customer, and the
  /// wait for the app to start the order's Live Activity (after which the gateway starts it).
  @discardableResult
  public func orderConfirmed(
    _ order: OrderConfirmed, occurredAt: Date, correlationID: String?, messageID: String, consumer: String
  ) throws -> Bool {
    let now = clock.now()
    let store = self.store
    return try once(messageID, consumer, now) { db in
      try store.queueAlert(
        .orderConfirmed, user: order.userId, orderId: order.orderId, occurredAt: occurredAt,
        correlationID: correlationID, at: now, expiresAt: now + self.updateLifetime, in: db)
      if let after = self.startAfter {
        try store.scheduleStart(
          order.orderId, user: order.userId, hub: order.hub, dueAt: now + after, correlationID: correlationID,
          in: db)
      }
    }
  }

  // MARK: - Hub notices

  /// A notice from hub staff: stored for broadcast to the hub's channel and published as
  /// `hub.notice` in one transaction. Throws `HubNoticeRules.Refusal` for bad input.
  public func postNotice(
    hub: HubID, title: String, body: String, minutes: Int?, correlationID: String?
  ) throws -> HubNotice {
    let now = clock.now()
    let notice = try HubNoticeRules.notice(
      id: "ntc_" + noticeIDs.next(), hub: hub, title: title, body: body, minutes: minutes, at: now)
    let store = self.store
    try store.database.write { db in
      let sequence = try store.insertNotice(notice, correlationID: correlationID, in: db)
      try store.append(
        try EventEnvelope.message(
          id: self.eventIDs.next(), type: NoticeEventType.posted, occurredAt: notice.postedAt,
          source: NoticeEventType.source, correlationId: correlationID,
          subject: EventSubject.notice(hub: hub),
          sequence: sequence, payload: notice), in: db)
    }
    return notice
  }

  /// The hub's notice showing now and its APNs channel (what the app subscribes a hub-news
  /// activity to).
  public func currentNotice(hub: HubID) throws -> (notice: HubNotice?, channelID: String?) {
    try store.currentNotice(hub: hub, at: clock.now())
  }

  /// An alert for every device of `user` (order confirmed or declined), once per message id.
  @discardableResult
  public func queueAlert(
    _ text: AlertText, user: String, orderId: String, occurredAt: Date, correlationID: String? = nil,
    messageID: String, consumer: String
  ) throws -> Bool {
    let now = clock.now()
    let store = self.store
    return try once(messageID, consumer, now) { db in
      try store.queueAlert(
        text, user: user, orderId: orderId, occurredAt: occurredAt, correlationID: correlationID, at: now,
        expiresAt: now + self.updateLifetime,
        in: db)
    }
  }

  /// Forgets inbox entries processed more than `retention` ago (longer than the broker could
  /// redeliver them).
  @discardableResult
  public func purgeInbox(retention: TimeInterval = 7 * 86_400) throws -> Int {
    try store.purgeInbox(olderThan: clock.now() - retention)
  }

  /// `effect` in one transaction with the claim of `messageID`; false (and no effect) if the
  /// message was handled before.
  private func once(
    _ messageID: String, _ consumer: String, _ now: Date, _ effect: (any SQLConnection) throws -> Void
  ) throws -> Bool {
    let store = self.store
    return try store.database.write { db in
      guard try store.claim(messageID: messageID, consumer: consumer, at: now, in: db) else { return false }
      try effect(db)
      return true
    }
  }
}
