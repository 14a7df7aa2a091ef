import Foundation

/// What became of a `POST /v1/orders` when its attempt was recorded under the user's key.
public enum AttemptStart: Sendable, Hashable {
  /// New: the saga may start; the order as just recorded (the saga's first step takes it in
  /// hand instead of reading it back).
  case started(OrderRecord)
  /// The key's answer, to replay.
  case replay(OrderReply)
  /// The key's first request is still running.
  case inProgress(orderId: String)
  /// The key was used with another body.
  case keyReused

  /// A key used before: the same body (`fingerprint` equal to the `stored` one) replays the
  /// first answer, or waits for it while the first request runs; another body is refused, so
  /// one key never pays for two different orders.
  public static func repeated(fingerprint: String, stored: String, orderId: String, reply: OrderReply?)
    -> AttemptStart
  {
    guard fingerprint == stored else { return .keyReused }
    guard let reply else { return .inProgress(orderId: orderId) }
    return .replay(reply)
  }
}
