import CRabbitMQ
import Foundation

/// One-off broker chores over a short-lived connection on its own thread: inspecting and
/// deleting queues (tests, operations scripts).
public enum AMQPAdmin {
  /// The number of ready messages in `queue` (passive declare); throws if it does not exist.
  public static func messageCount(configuration: AMQPConfiguration, queue: String) async throws -> Int {
    try await run(configuration) { channel in
      try channel.declareQueue(queue, passive: true, durable: false, exclusive: false, autoDelete: false)
        .messageCount
    }
  }

  /// Deletes the queues (missing ones are fine).
  public static func deleteQueues(configuration: AMQPConfiguration, _ queues: [String]) async throws {
    try await run(configuration) { channel in
      for queue in queues { try channel.deleteQueue(queue) }
    }
  }

  private static func run<T: Sendable>(
    _ configuration: AMQPConfiguration, _ body: @escaping @Sendable (AMQPChannel) throws -> T
  ) async throws -> T {
    try await withCheckedThrowingContinuation { continuation in
      let thread = Thread {
        do {
          let connection = try ConnectionDriver.open(configuration: configuration)
          do {
            let result = try body(AMQPChannel(connection: connection))
            amqp_channel_close(connection, 1, AMQP_REPLY_SUCCESS)
            amqp_connection_close(connection, AMQP_REPLY_SUCCESS)
            amqp_destroy_connection(connection)
            continuation.resume(returning: result)
          } catch {
            // After an error only destroying is safe (PLATFORM.md).
            amqp_destroy_connection(connection)
            continuation.resume(throwing: error)
          }
        } catch {
          continuation.resume(throwing: error)
        }
      }
      thread.start()
    }
  }
}
