/// What can go wrong talking to the broker.
///
/// Every error means "not known to have happened": a publish that throws may still have reached
/// the broker, so callers retry and consumers deduplicate.
public enum AMQPError: Error, Sendable, Hashable, CustomStringConvertible {
  /// The connection is down (or still connecting); the call failed at once instead of waiting.
  case notConnected
  /// The connection broke while the operation was in flight.
  case connectionLost(String)
  /// No answer (confirm or reply) within the allowed time.
  case timeout
  /// The broker refused a published message (`basic.nack`).
  case nacked(messageID: String)
  /// A `mandatory` message matched no queue (`basic.return`).
  case unroutable(messageID: String)
  /// The service is shutting down.
  case shuttingDown
  /// `GROCER_AMQP_URL` (or the configured URL) cannot be parsed.
  case invalidURL(String)
  /// librabbitmq reported an error for `operation`.
  case library(operation: String, message: String)
  /// The broker closed the channel or connection (e.g. 320 CONNECTION_FORCED, 404 NOT_FOUND).
  case brokerClosed(code: Int, text: String)

  public var description: String {
    switch self {
    case .notConnected: "not connected to the broker"
    case .connectionLost(let reason): "connection lost: \(reason)"
    case .timeout: "timed out"
    case .nacked(let id): "broker nacked message \(id)"
    case .unroutable(let id): "message \(id) was returned unroutable"
    case .shuttingDown: "shutting down"
    case .invalidURL(let url): "invalid AMQP URL \(url)"
    case .library(let operation, let message): "\(operation) failed: \(message)"
    case .brokerClosed(let code, let text): "broker closed the channel: \(code) \(text)"
    }
  }
}
