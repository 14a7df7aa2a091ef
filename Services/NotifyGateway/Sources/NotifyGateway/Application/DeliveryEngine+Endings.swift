import APNsSimulator
import Foundation
import GrocerContracts
import GrocerCore
import GrocerStorage

/// Activities near their eight hours ended by the engine's sweep when no update ends them.
extension DeliveryEngine {
  /// Records how the end of an aging activity went: ended (or, refused for good, given up as
  /// ended), tried again at the next sweep, or its token gone.
  func record(
    _ outcome: PushDelivery.UpdateOutcome, ofEnding activity: NotifyStore.AgingActivity, ended: PushOutcome?
  ) throws {
    let store = self.store
    let sender = options.sender
    try store.database.write { db in
      try self.publish(ended, correlationID: nil, in: db)
      // Saving the state lets the claim go too; otherwise it is let go alone.
      var saved: ActivityState?
      switch outcome {
      case .handled(let state): saved = state
      case .retry: break
      case .dropped:
        saved = activity.state
        saved?.ended = true
      case .tokenGone: try store.forgetActivityToken(activity.orderId, token: activity.token, in: db)
      }
      if let saved,
        try store.saveActivityState(
          saved, orderId: activity.orderId, token: activity.token, releasing: sender, in: db)
      {
        return
      }
      try store.releaseActivity(activity.orderId, sender: sender, in: db)
    }
  }

  /// Ends an activity near its eight hours with what it shows and an alert that the order is
  /// still being handled.
  func end(_ activity: NotifyStore.AgingActivity) async -> Record {
    let now = clock.now()
    guard let (push, next) = policy.endAtLimit(activity.state, now: now), let shown = activity.state.shown
    else {
      return .ending(activity, .retry(at: now), ended: nil)
    }
    let request = APNsRequest(
      token: activity.token, pushType: .liveactivity, topic: options.bundleID + APNsRules.liveActivitySuffix,
      priority: push.priority, expiration: now + policy.endingMargin, id: Self.apnsIDs.next(),
      payload: PushPayloads.liveActivity(
        shown, event: .end, alert: push.alert, timestamp: push.timestamp, relevance: push.relevance))
    let response = await send(request)
    count(request, response)
    let answer = Self.answer(response)
    let outcome = PushDelivery.outcome(
      of: answer, next: next, attempts: 0, expiresAt: now + policy.endingMargin, now: clock.now(), jitter: 1)
    if case .retry = outcome { return .ending(activity, outcome, ended: nil) }
    let answeredAt = clock.now()
    return .ending(
      activity, outcome,
      ended: PushOutcome(
        pushId: request.id, tokenKind: .liveActivity, token: activity.token, orderId: activity.orderId,
        userId: activity.userId, pushType: APNsRequest.PushType.liveactivity.rawValue, event: "end",
        version: activity.state.lastVersion, priority: push.priority, status: response?.status,
        reason: response?.reason ?? (response == nil ? "NoAnswer" : nil),
        latencyMs: Self.milliseconds(from: now, to: answeredAt), answeredAt: answeredAt))
  }

  /// Whether the aging sweep is due at `now` (every `sweepInterval` by the engine's clock), noting
  /// that it runs.
  func sweepIsDue(_ now: Date) -> Bool {
    lastSweep.withLock { last in
      guard last.map({ now.timeIntervalSince($0) >= options.sweepInterval }) ?? true else { return false }
      last = now
      return true
    }
  }
}
