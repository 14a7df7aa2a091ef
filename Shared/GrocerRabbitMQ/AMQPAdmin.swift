import CRabbitMQ
import Foundation
import GrocerAMQP

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

  /// Shows up to `limit` messages of `queue` without removing them: takes them with `basic.get`,
  /// then puts them all back (`basic.nack` with requeue; they keep their place and are marked
  /// redelivered). For parking queues, which have no dead-lettering of their own.
  public static func peek(
    configuration: AMQPConfiguration, queue: String, limit: Int
  ) async throws -> [AMQPTakenMessage] {
    try await withMessages(configuration: configuration, queue: queue, limit: limit) { messages in
      (acknowledge: [], result: messages)
    }
  }

  /// Takes up to `limit` messages of `queue` with `basic.get` and hands them to `body`, which
  /// answers which of them to remove (their delivery tags; `ack`ed once it returned) and a
  /// result; every other message is put back (`basic.nack` with requeue). If `body` throws, all
  /// are put back. The messages stay unacked on a connection of their own meanwhile (without
  /// heartbeats, so a long `body` does not lose them), so if this process dies they go back too.
  ///
  /// For moving messages elsewhere safely: publish them (with confirms) inside `body`, and answer
  /// only the confirmed ones.
  public static func withMessages<T: Sendable>(
    configuration: AMQPConfiguration, queue: String, limit: Int,
    _ body: @escaping @Sendable ([AMQPTakenMessage]) async throws -> (acknowledge: Set<UInt64>, result: T)
  ) async throws -> T {
    let quiet = {
      var copy = configuration
      copy.heartbeat = 0
      return copy
    }()
    let handOver = MessageHandOver()
    let messages: [AMQPTakenMessage] = try await withCheckedThrowingContinuation { taken in
      Thread {
        let connection: amqp_connection_state_t
        var got: [AMQPTakenMessage] = []
        do {
          connection = try ConnectionDriver.open(configuration: quiet)
        } catch {
          taken.resume(throwing: error)
          return
        }
        let channel = AMQPChannel(connection: connection)
        do {
          while got.count < limit, let message = try channel.get(queue: queue) {
            got.append(
              AMQPTakenMessage(
                deliveryTag: message.deliveryTag, delivery: message.delivery, timestamp: message.timestamp))
          }
        } catch {
          amqp_destroy_connection(connection)
          taken.resume(throwing: error)
          return
        }
        taken.resume(returning: got)
        let (acknowledge, finished) = handOver.awaitDecision()
        do {
          for message in got {
            if acknowledge.contains(message.deliveryTag) {
              try channel.ack(message.deliveryTag, multiple: false)
            } else {
              try channel.nack(message.deliveryTag, requeue: true)
            }
          }
          // A synchronous call, so the acks are known to have reached the broker.
          _ = try channel.declareQueue(
            queue, passive: true, durable: false, exclusive: false, autoDelete: false)
          amqp_channel_close(connection, 1, AMQP_REPLY_SUCCESS)
          amqp_connection_close(connection, AMQP_REPLY_SUCCESS)
          amqp_destroy_connection(connection)
          finished.resume()
        } catch {
          amqp_destroy_connection(connection)
          finished.resume(throwing: error)
        }
      }.start()
    }
    let outcome: Result<(acknowledge: Set<UInt64>, result: T), any Error>
    do {
      outcome = .success(try await body(messages))
    } catch {
      outcome = .failure(error)
    }
    let acknowledge = (try? outcome.get().acknowledge) ?? []
    try await withCheckedThrowingContinuation { (finished: CheckedContinuation<Void, any Error>) in
      handOver.decide(acknowledge: acknowledge, finished: finished)
    }
    return try outcome.get().result
  }

  static func run<T: Sendable>(
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

/// A message taken with `basic.get` and not yet settled (see `AMQPAdmin.withMessages`).
public struct AMQPTakenMessage: Sendable {
  /// Names this message on its channel: the tag `withMessages`' body answers to remove it.
  public var deliveryTag: UInt64
  /// Its body, routing key (for a dead-lettered message: the dead-letter routing key), exchange,
  /// properties and string/integer headers (`x-first-death-queue`, `x-first-death-reason`, …;
  /// the `x-death` array is not read).
  public var delivery: AMQPDelivery
  /// The `timestamp` property, when set.
  public var timestamp: Date?
}

/// Passes the body's decision from the caller's task to the connection thread that holds the
/// messages (which blocks until it arrives).
private final class MessageHandOver: @unchecked Sendable {
  private let decided = DispatchSemaphore(value: 0)
  private let lock = NSLock()
  private var acknowledge: Set<UInt64> = []
  private var finished: CheckedContinuation<Void, any Error>?

  func decide(acknowledge: Set<UInt64>, finished: CheckedContinuation<Void, any Error>) {
    lock.withLock {
      self.acknowledge = acknowledge
      self.finished = finished
    }
    decided.signal()
  }

  func awaitDecision() -> (Set<UInt64>, CheckedContinuation<Void, any Error>) {
    decided.wait()
    return lock.withLock { (acknowledge, finished!) }
  }
}
