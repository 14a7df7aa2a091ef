import Foundation
import GrocerContracts

/// What TrackingService knows of an order's Live Activity on the lock screen, from
/// NotifyGateway's `push.delivered` / `push.failed`, and what the snapshot says of it.
///
/// Outcomes may arrive in any order: each is applied only if it is at least as new as the last
/// one applied (by APNs's answer time in whole seconds, then the tracking version it carried),
/// and only for the activity's current token (a replaced activity's answers say nothing of the
/// new one).
public struct LiveActivityDelivery: Sendable, Hashable {
  /// When APNs last accepted a push for the activity.
  public var lastPushAt: Date?
  /// When the last delivered update goes stale on the lock screen (its `stale-date`).
  public var staleAt: Date?
  /// The final push (`event: end`) was delivered.
  public var ended = false
  /// When a push failed after the last delivery (nil: none did).
  public var failedAt: Date?
  /// APNs said the token is gone (the user or the system removed the activity).
  public var tokenGone = false
  /// The newest outcome applied: its answer time and the tracking version it carried.
  public var lastOutcomeAt: Date?
  public var lastOutcomeVersion: Int64 = 0
  /// Raised by one with every applied outcome, so a reply built from an older read is never
  /// remembered over a newer one (the tracking version does not move with deliveries).
  public var revision: Int64 = 0

  public init() {}

  /// A new activity (a new token): nothing delivered to it yet, at the next revision.
  public func restarted() -> LiveActivityDelivery {
    var fresh = LiveActivityDelivery()
    fresh.revision = revision + 1
    return fresh
  }

  /// The delivery after `outcome`, or nil when it changes nothing: another token kind or token,
  /// or older than what was applied.
  public func applying(_ outcome: PushOutcome, currentToken: String?) -> LiveActivityDelivery? {
    guard outcome.tokenKind == .liveActivity, let currentToken, outcome.token == currentToken else {
      return nil
    }
    let version = outcome.version ?? 0
    if let lastAt = lastOutcomeAt, (outcome.answeredAt, version) < (lastAt, lastOutcomeVersion) { return nil }
    var next = self
    next.lastOutcomeAt = outcome.answeredAt
    next.lastOutcomeVersion = version
    next.revision += 1
    if outcome.status == 200 {
      next.lastPushAt = max(outcome.answeredAt, lastPushAt ?? .distantPast)
      next.staleAt = outcome.staleDate
      next.ended = ended || outcome.event == "end"
      next.failedAt = nil
    } else if outcome.tokenIsGone {
      next.tokenGone = true
    } else {
      next.failedAt = outcome.answeredAt
    }
    return next
  }

  /// The snapshot's `liveActivity` at `now`, for an order with (`hasToken`) or without a
  /// registered activity token.
  public func view(hasToken: Bool, at now: Date) -> LiveActivityView {
    LiveActivityView(state: state(hasToken: hasToken, at: now), lastPushAt: lastPushAt)
  }

  func state(hasToken: Bool, at now: Date) -> LiveActivityView.State {
    if ended { return .ended }
    if !hasToken || tokenGone { return .none }
    if failedAt != nil { return .stale }
    if let staleAt, now >= staleAt { return .stale }
    return .current
  }

  /// When the view turns by itself (a current card reaching its stale date); nil: not before
  /// the next outcome.
  public func viewChanges(hasToken: Bool, after now: Date) -> Date? {
    guard state(hasToken: hasToken, at: now) == .current, let staleAt, staleAt > now else { return nil }
    return staleAt
  }
}
