import Foundation

/// Request/reply to a named queue: what a service's Events/ adapters need of the broker, apart
/// from the librabbitmq client (`AMQPRPCClient` in GrocerRabbitMQ) that does it.
public protocol AMQPRequester: Sendable {
  /// Sends `body` to the queue `routingKey` and returns the reply's body. Throws
  /// `AMQPError.notConnected` or `.shuttingDown` when nothing was sent, `.unroutable` when there
  /// is no such queue (nothing was delivered), `.timeout` when no reply came in time,
  /// `.connectionLost` if the connection broke while waiting.
  func request(routingKey: String, body: Data, timeout: Duration) async throws -> Data
  /// Waits until the connection is up (at once when it is); false if it is not within `timeout`.
  func waitUntilConnected(timeout: Duration) async -> Bool
}
