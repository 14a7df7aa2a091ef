import Foundation

/// What an APNs answer means for a due push, by Apple's rules: delivered moves the activity on;
/// a dead token (410, `BadDeviceToken`) is forgotten; 429, 5xx and no answer are retried with
/// backoff and jitter, never past the push's expiration; anything else is dropped. A push past
/// its expiration is never sent.
public enum PushDelivery {
  /// APNs's answer, as far as delivery cares.
  public enum Answer: Sendable, Hashable {
    case delivered
    case tokenGone
    /// Refused for good (a 4xx other than a dead token).
    case refused
    /// 429, 5xx, or no answer at all.
    case tryAgain
  }

  /// How a due Live Activity update ended.
  public enum UpdateOutcome: Sendable, Hashable {
    /// Sent (or judged not worth sending): the activity's state moves on, the update is done.
    case handled(ActivityState)
    /// Try again at `at`.
    case retry(at: Date)
    /// Dropped: past its expiration, or refused for good.
    case dropped
    /// The token is dead: forget it; the update waits for a new one.
    case tokenGone
  }

  /// How a queued alert ended.
  public enum AlertOutcome: Sendable, Hashable {
    case delivered
    case retry(at: Date)
    /// Past its expiration, or refused for good.
    case dropped
    /// The device token is dead: the device and its alerts are forgotten.
    case tokenGone
  }

  /// Whether a push expiring at `expiresAt` may still be sent at `now`.
  public static func isWorthSending(expiresAt: Date, now: Date) -> Bool { now < expiresAt }

  /// The outcome of an update that was sent; `next` is the activity's state once it is shown.
  public static func outcome(
    of answer: Answer, next: ActivityState, attempts: Int, expiresAt: Date, now: Date, jitter: Double
  ) -> UpdateOutcome {
    switch answer {
    case .delivered: return .handled(next)
    case .tokenGone: return .tokenGone
    case .refused: return .dropped
    case .tryAgain:
      return retryTime(attempts: attempts, expiresAt: expiresAt, now: now, jitter: jitter)
        .map { .retry(at: $0) } ?? .dropped
    }
  }

  /// The outcome of an alert that was sent.
  public static func outcome(
    ofAlert answer: Answer, attempts: Int, expiresAt: Date, now: Date, jitter: Double
  ) -> AlertOutcome {
    switch answer {
    case .delivered: return .delivered
    case .tokenGone: return .tokenGone
    case .refused: return .dropped
    case .tryAgain:
      return retryTime(attempts: attempts, expiresAt: expiresAt, now: now, jitter: jitter)
        .map { .retry(at: $0) } ?? .dropped
    }
  }

  /// Backoff with jitter: half a second doubling per attempt, at most 30 s, times `jitter`
  /// (50–100 %); nil when the next try would come at or after `expiresAt`.
  public static func retryTime(attempts: Int, expiresAt: Date, now: Date, jitter: Double) -> Date? {
    let base = min(30, 0.5 * pow(2, Double(min(attempts, 10))))
    let at = now + base * jitter
    return at < expiresAt ? at : nil
  }

  /// The jitter factor for a random draw: 50–100 % in steps of 0.05 %.
  public static func jitter(_ random: UInt64) -> Double { 0.5 + Double(random % 1000) / 2000 }
}
