import CRabbitMQ
import Foundation
import GrocerAMQP
import GrocerCore
import GrocerFastPath
import GrocerRuntime

/// Request/reply over RabbitMQ's direct reply-to, many requests in flight on one connection.
///
/// A request is published to the **default exchange** with the routing key = the server's queue
/// name (so it reaches exactly that queue, not `grocer.events` subscribers), `reply_to =
/// amq.rabbitmq.reply-to` and a fresh `correlation_id`; the reply comes back on the same channel,
/// which consumes `amq.rabbitmq.reply-to` (no-ack) before anything is published. The request
/// carries `expiration` = the time-out, so a request nobody took in time is dropped by the broker,
/// and is `mandatory`, so one for a queue that does not exist (gone with a cluster node, not yet
/// declared again by its servers) comes back at once instead of waiting out the time-out.
public final class AMQPRPCClient: AMQPRequester, LifecycleService, @unchecked Sendable {
  /// The pseudo-queue of direct reply-to.
  static let replyQueue = "amq.rabbitmq.reply-to"

  public let name: String
  private let driver: ConnectionDriver
  private let logger: Logger
  /// Correlation ids only need to be unique among this client's requests: a counter after a
  /// random prefix, with no system call per request (Foundation's `UUID()` opens and reads
  /// `/dev/urandom` each time on Linux).
  private let correlationIDs = ProcessUniqueIDs()

  // Connection-thread state.
  private var pending:
    [String: (continuation: CheckedContinuation<Data, any Error>, deadline: ContinuousClock.Instant)] = [:]

  public init(configuration: AMQPConfiguration, logger: Logger, name: String = "amqp-rpc-client") {
    self.name = name
    self.driver = ConnectionDriver(configuration: configuration, logger: logger)
    self.logger = logger
  }

  public var isConnected: Bool { driver.isConnected }

  /// The broker node (`host:port`) it is connected to; nil while it is not.
  public var connectedNode: String? { driver.connectedNode }

  public func start() async throws { await driver.start(role: self) }

  public func waitUntilConnected(timeout: Duration = .seconds(10)) async -> Bool {
    await driver.waitUntilConnected(timeout: timeout)
  }

  public func shutdown() async { await driver.shutdown() }

  /// Returns when the connection thread has ended; throws `ConnectionLoopEnded` if not after `shutdown`.
  public func finished() async throws { try await driver.stopped.wait() }

  /// Sends `body` to the queue `routingKey` and returns the reply's body.
  ///
  /// Throws `AMQPError.notConnected` at once while disconnected, `.unroutable` when no queue of
  /// that name exists (nothing was delivered), `.timeout` when no reply came in time,
  /// `.connectionLost` if the connection broke while waiting.
  public func request(routingKey: String, body: Data, timeout: Duration) async throws -> Data {
    guard driver.isConnected else { throw AMQPError.notConnected }
    let correlationID = correlationIDs.next()
    let deadline = ContinuousClock.now + timeout
    let expiration = max(1, ConnectionDriver.milliseconds(timeout))
    return try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Data, any Error>) in
      driver.submit(
        run: { channel in
          self.pending[correlationID] = (continuation, deadline)
          try channel.publish(
            exchange: "", routingKey: routingKey, mandatory: true,
            properties: AMQPOutgoingProperties(
              correlationID: correlationID, replyTo: Self.replyQueue, timestamp: Date(),
              expirationMilliseconds: expiration, persistent: false),
            body: body)
        },
        reject: { continuation.resume(throwing: $0) })
    }
  }
}

extension AMQPRPCClient: ConnectionRole {
  func setUp(_ channel: AMQPChannel) throws {
    _ = try channel.consume(queue: Self.replyQueue, noAck: true)
  }

  func didConnect(generation: Int) {}

  func handle(method: amqp_method_t, channel: AMQPChannel) throws {
    switch method.id {
    case GROCER_AMQP_BASIC_DELIVER:
      let deliver = method.decoded.assumingMemoryBound(to: amqp_basic_deliver_t.self).pointee
      let reply = try channel.readMessage(
        routingKey: AMQPChannel.string(deliver.routing_key) ?? "", exchange: "", redelivered: false)
      guard let id = reply.correlationID, let waiting = pending.removeValue(forKey: id) else {
        logger.debug("dropped a late or unknown reply", ["amqp.correlation_id": reply.correlationID ?? ""])
        return
      }
      waiting.continuation.resume(returning: reply.body)
    case GROCER_AMQP_BASIC_RETURN:
      let info = method.decoded.assumingMemoryBound(to: amqp_basic_return_t.self).pointee
      let returned = try channel.readMessage(
        routingKey: AMQPChannel.string(info.routing_key) ?? "", exchange: "", redelivered: false)
      guard let id = returned.correlationID, let waiting = pending.removeValue(forKey: id) else { return }
      waiting.continuation.resume(throwing: AMQPError.unroutable(messageID: id))
    default:
      logger.debug("rpc client ignored a method", ["amqp.method": String(method.id)])
    }
  }

  func failInFlight(_ error: AMQPError) {
    let waiting = pending
    pending = [:]
    for (_, entry) in waiting { entry.continuation.resume(throwing: error) }
  }

  func tick(now: ContinuousClock.Instant) {
    guard !pending.isEmpty else { return }
    for (id, entry) in pending where entry.deadline <= now {
      pending[id] = nil
      entry.continuation.resume(throwing: AMQPError.timeout)
    }
  }
}
