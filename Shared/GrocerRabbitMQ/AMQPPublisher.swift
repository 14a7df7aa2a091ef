import CRabbitMQ
import Foundation
import GrocerAMQP
import GrocerCore
import GrocerRuntime
import Synchronization

/// Publishes with publisher confirms on its own connection, many messages in flight at once.
///
/// `publish` writes the whole batch, then waits for the broker's `basic.ack`s (usually with
/// `multiple`), so a batch of 500 costs about one round trip, not 500. It returns only when every
/// message is confirmed; a nack, a lost connection, a return (with `mandatory`) or a time-out
/// throws, and the caller (the outbox relay) publishes again: duplicates are possible, losses
/// are not. While disconnected it throws `AMQPError.notConnected` at once.
public final class AMQPPublisher: ConfirmedPublisher, LifecycleService, @unchecked Sendable {
  public let name: String
  private let driver: ConnectionDriver
  private let mandatory: Bool
  private let published: Counter
  private let logger: Logger
  /// `publish` calls waiting for their confirms, which shutdown drains.
  private let inFlight = InFlight()

  /// One `publish` call waiting for its confirms.
  private final class Batch {
    var remaining: Int
    var continuation: CheckedContinuation<Void, any Error>?
    var error: AMQPError?
    let deadline: ContinuousClock.Instant

    init(count: Int, continuation: CheckedContinuation<Void, any Error>, deadline: ContinuousClock.Instant) {
      self.remaining = count
      self.continuation = continuation
      self.deadline = deadline
    }

    var isFinished: Bool { continuation == nil }

    func finish(_ error: AMQPError?) {
      guard let continuation else { return }
      self.continuation = nil
      if let error { continuation.resume(throwing: error) } else { continuation.resume() }
    }

    func settle(_ error: AMQPError?) {
      if let error, self.error == nil { self.error = error }
      remaining -= 1
      if remaining == 0 || self.error != nil { finish(self.error) }
    }
  }

  // Connection-thread state.
  private var nextTag: UInt64 = 1
  private var oldestTag: UInt64 = 1
  private var pending: [UInt64: (batch: Batch, messageID: String)] = [:]
  private var batches: [Batch] = []
  private var returned: Set<String> = []

  /// - Parameter mandatory: have the broker return (and this publisher fail) messages that
  ///   match no queue.
  public init(
    configuration: AMQPConfiguration, mandatory: Bool = false, logger: Logger, metrics: MetricsRegistry,
    name: String = "amqp-publisher"
  ) {
    self.name = name
    self.driver = ConnectionDriver(configuration: configuration, logger: logger, metrics: metrics)
    self.mandatory = mandatory
    self.logger = logger
    self.published = metrics.counter(
      "amqp_messages_confirmed_total", help: "Messages the broker confirmed to this publisher.")
  }

  public var isConnected: Bool { driver.isConnected }

  /// The broker node (`host:port`) it is connected to; nil while it is not.
  public var connectedNode: String? { driver.connectedNode }

  /// How many times it reconnected to another node than before (a cluster's failovers).
  public var failovers: Int { driver.failovers }

  /// Starts the connection; returns once connected or after the first attempt failed (it keeps
  /// retrying in the background).
  public func start() async throws {
    await driver.start(role: self)
  }

  /// Waits until the connection is up (for start-up ordering and tests).
  public func waitUntilConnected(timeout: Duration = .seconds(10)) async -> Bool {
    await driver.waitUntilConnected(timeout: timeout)
  }

  /// Waits (up to the publish time-out) for publishes in flight to be confirmed, then closes.
  public func shutdown() async {
    _ = await inFlight.drain(within: driver.configuration.publishTimeout)
    await driver.shutdown()
  }

  /// Returns when the connection thread has ended; throws `ConnectionLoopEnded` if not after `shutdown`.
  public func finished() async throws { try await driver.stopped.wait() }

  public func publish(_ messages: [OutgoingMessage]) async throws {
    guard !messages.isEmpty else { return }
    guard driver.isConnected else { throw AMQPError.notConnected }
    let deadline = ContinuousClock.now + driver.configuration.publishTimeout
    inFlight.enter()
    defer { inFlight.leave() }
    try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
      driver.submit(
        run: { channel in
          try self.send(
            messages, Batch(count: messages.count, continuation: continuation, deadline: deadline), channel)
        },
        reject: { continuation.resume(throwing: $0) })
    }
    published.increment(by: messages.count)
  }

  private func send(_ messages: [OutgoingMessage], _ batch: Batch, _ channel: AMQPChannel) throws {
    batches.append(batch)
    for message in messages {
      let tag = nextTag
      nextTag += 1
      pending[tag] = (batch, message.messageID)
      try channel.publish(
        exchange: message.exchange, routingKey: message.routingKey, mandatory: mandatory,
        properties: AMQPOutgoingProperties(
          messageID: message.messageID, type: message.type, correlationID: message.correlationID,
          timestamp: message.timestamp),
        body: message.body)
    }
  }
}

extension AMQPPublisher: ConnectionRole {
  func setUp(_ channel: AMQPChannel) throws {
    try channel.declareEventExchanges()
    try channel.confirmSelect()
    nextTag = 1
    oldestTag = 1
  }

  func didConnect(generation: Int) {}

  func handle(method: amqp_method_t, channel: AMQPChannel) throws {
    switch method.id {
    case GROCER_AMQP_BASIC_ACK:
      let ack = method.decoded.assumingMemoryBound(to: amqp_basic_ack_t.self).pointee
      settle(upTo: ack.delivery_tag, multiple: ack.multiple != 0, nacked: false)
    case GROCER_AMQP_BASIC_NACK:
      let nack = method.decoded.assumingMemoryBound(to: amqp_basic_nack_t.self).pointee
      settle(upTo: nack.delivery_tag, multiple: nack.multiple != 0, nacked: true)
    case GROCER_AMQP_BASIC_RETURN:
      let info = method.decoded.assumingMemoryBound(to: amqp_basic_return_t.self).pointee
      let message = try channel.readMessage(
        routingKey: AMQPChannel.string(info.routing_key) ?? "",
        exchange: AMQPChannel.string(info.exchange) ?? "", redelivered: false)
      // The confirm for a returned message follows the return; remember to fail it then.
      if let id = message.messageID { returned.insert(id) }
    default:
      logger.debug("publisher ignored a method", ["amqp.method": String(method.id)])
    }
  }

  private func settle(upTo tag: UInt64, multiple: Bool, nacked: Bool) {
    let tags: ClosedRange<UInt64> = multiple ? oldestTag...max(oldestTag, tag) : tag...tag
    for current in tags {
      guard let entry = pending.removeValue(forKey: current) else { continue }
      var error: AMQPError? = nacked ? .nacked(messageID: entry.messageID) : nil
      if returned.remove(entry.messageID) != nil { error = .unroutable(messageID: entry.messageID) }
      entry.batch.settle(error)
    }
    if multiple { oldestTag = max(oldestTag, tag + 1) }
    while oldestTag < nextTag && pending[oldestTag] == nil { oldestTag += 1 }
  }

  func failInFlight(_ error: AMQPError) {
    for batch in batches { batch.finish(error) }
    batches = []
    pending = [:]
    returned = []
  }

  func tick(now: ContinuousClock.Instant) {
    guard !batches.isEmpty else { return }
    for batch in batches where !batch.isFinished && batch.deadline <= now {
      batch.finish(.timeout)
    }
    batches.removeAll { $0.isFinished }
    if batches.isEmpty { pending = [:] }
  }
}
