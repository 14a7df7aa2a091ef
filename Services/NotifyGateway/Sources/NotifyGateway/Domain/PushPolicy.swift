import Foundation
import GrocerContracts

/// What NotifyGateway knows about one Live Activity between pushes.
public struct ActivityState: Sendable, Hashable {
  /// The newest snapshot version looked at (sent or judged not worth sending).
  public var lastVersion: Int64 = 0
  /// What the card shows now, as far as we know.
  public var shown: LiveActivityContent?
  public var ended = false
  /// When the priority-10 pushes of the last hour were sent (the budget's sliding window).
  public var highPriorityTimes: [Date] = []
  /// The latest `timestamp` pushed (Unix seconds). Each push carries its snapshot's
  /// `generatedAt`, which TrackingService raises by at least a second per version.
  public var lastTimestamp = 0
  /// When the activity started (a Live Activity lives at most eight hours).
  public var startedAt: Date

  public init(startedAt: Date) { self.startedAt = startedAt }
}

/// The rules for Live Activity pushes, pure and clock-injected:
///
/// - an older or repeated snapshot, or any after the end: nothing (the device would ignore it);
/// - `delivered` / `cancelled`: `event: end` with an alert, then nothing more;
/// - a stage change: priority 10 (with an alert on `arriving`);
/// - an ETA that moved by `etaDrift` or more at either end: priority 5;
/// - anything else (the rider moved, the card has no map): nothing;
/// - over `hourlyBudget` priority-10 pushes within any sixty minutes (a sliding window): priority
///   5, counted as a downgrade;
/// - within `endingMargin` of `maximumLifetime` (eight hours), the next update ends the activity
///   with its content and an alert that the order is still being handled (`endAtLimit` ends one
///   that gets no update meanwhile); the order's news then goes to the devices as alerts;
/// - past `maximumLifetime` the system ended the activity: nothing;
/// - every push carries the order's `relevance-score` (`LiveActivityRelevance`).
public struct PushPolicy: Sendable {
  public var hourlyBudget: Int
  public var etaDrift: TimeInterval = 60
  public var maximumLifetime: TimeInterval = 8 * 3600
  /// How long before `maximumLifetime` an activity is ended by us, with its content, rather
  /// than by the system, which would leave it showing old news.
  public var endingMargin: TimeInterval = 15 * 60

  public init(hourlyBudget: Int = 12) { self.hourlyBudget = hourlyBudget }

  public enum Skip: String, Sendable, Hashable {
    case stale, ended, expired, noVisibleChange
  }

  public struct Push: Sendable, Hashable {
    public var priority: Int
    public var event: LiveActivityEvent
    public var alert: AlertText?
    /// Wanted priority 10, sent at 5 because the budget was used up.
    public var downgraded: Bool
    /// The payload's `timestamp` (Unix seconds): the snapshot's `generatedAt`, moved past the
    /// previous push's when both fall in one second — the device keeps only an update newer than
    /// what it shows, so each push must be strictly later than the last.
    public var timestamp: Int
    /// The activity's `relevance-score` among the customer's others.
    public var relevance: Double = 0
  }

  public enum Decision: Sendable, Hashable {
    case skip(Skip)
    case send(Push)
  }

  /// The decision for `snapshot`, and the state once it is carried out (a skip also records the
  /// version, so an older snapshot arriving later is never sent).
  public func decide(_ snapshot: TrackingSnapshot, state: ActivityState, now: Date) -> (
    Decision, ActivityState
  ) {
    var next = state
    if state.ended { return (.skip(.ended), state) }
    if now.timeIntervalSince(state.startedAt) >= maximumLifetime {
      next.ended = true
      return (.skip(.expired), next)
    }
    guard snapshot.version > state.lastVersion else { return (.skip(.stale), state) }
    next.lastVersion = snapshot.version
    let content = LiveActivityContent(snapshot)
    let event: LiveActivityEvent
    let wantsHigh: Bool
    let nearLimit = isNearLimit(state, now: now)
    if snapshot.status.isTerminal || nearLimit {
      event = .end
      wantsHigh = true
    } else if content.status != state.shown?.status {
      event = .update
      wantsHigh = true
    } else if etaMoved(from: state.shown, to: content) {
      event = .update
      wantsHigh = false
    } else {
      return (.skip(.noVisibleChange), next)
    }
    var priority = wantsHigh ? 10 : 5
    var downgraded = false
    if wantsHigh {
      next.highPriorityTimes.removeAll { now.timeIntervalSince($0) >= 3600 }
      if next.highPriorityTimes.count >= hourlyBudget {
        priority = 5
        downgraded = true
      } else {
        next.highPriorityTimes.append(now)
      }
    }
    next.shown = content
    next.ended = event == .end
    // Exactly the snapshot's `generatedAt` (whole seconds, rising per version: TrackingService
    // stamps it so), which is what the app stamps its own foreground update with.
    let timestamp = LiveActivityContent.seconds(snapshot.generatedAt)
    next.lastTimestamp = max(timestamp, state.lastTimestamp)
    let alert = snapshot.status.isTerminal || !nearLimit ? AlertText.stage(snapshot) : .stillHandled
    return (
      .send(
        Push(
          priority: priority, event: event, alert: alert, downgraded: downgraded, timestamp: timestamp,
          relevance: LiveActivityRelevance.score(snapshot))),
      next
    )
  }

  /// Whether an activity is within `endingMargin` of the system ending it (and not past it).
  func isNearLimit(_ state: ActivityState, now: Date) -> Bool {
    now.timeIntervalSince(state.startedAt) >= maximumLifetime - endingMargin
  }

  /// The end of an activity that reached `endingMargin` before its limit with no update to carry
  /// it: its shown content, an alert that the order is still being handled, a timestamp after
  /// the last push's. Nil when it is not due (ended, not near the limit, past it, or never shown).
  public func endAtLimit(_ state: ActivityState, now: Date) -> (Push, ActivityState)? {
    guard !state.ended, state.shown != nil, isNearLimit(state, now: now),
      now.timeIntervalSince(state.startedAt) < maximumLifetime
    else { return nil }
    var next = state
    next.ended = true
    var priority = 10
    next.highPriorityTimes.removeAll { now.timeIntervalSince($0) >= 3600 }
    if next.highPriorityTimes.count >= hourlyBudget {
      priority = 5
    } else {
      next.highPriorityTimes.append(now)
    }
    let timestamp = max(LiveActivityContent.seconds(now), state.lastTimestamp + 1)
    next.lastTimestamp = timestamp
    return (
      Push(
        priority: priority, event: .end, alert: .stillHandled, downgraded: priority == 5,
        timestamp: timestamp,
        relevance: 0),
      next
    )
  }

  func etaMoved(from shown: LiveActivityContent?, to content: LiveActivityContent) -> Bool {
    guard let shown else { return true }
    func moved(_ a: Int?, _ b: Int?) -> Bool {
      switch (a, b) {
      case (nil, nil): false
      case (let a?, let b?): abs(a - b) >= Int(etaDrift)
      default: true
      }
    }
    return moved(shown.etaEarliest, content.etaEarliest) || moved(shown.etaLatest, content.etaLatest)
  }
}
