import CRabbitMQ
import Foundation
import GrocerAMQP
import GrocerCore
import GrocerRuntime
import Synchronization

/// Consumes one queue on its own connection with manual acks and bounded prefetch.
///
/// The handler runs in a Task, never on the connection thread, **one delivery at a time in
/// delivery order**; its disposition goes back to the connection thread, which acks only after
/// the handler returned (consecutive acks are coalesced into one `multiple` ack). A batch
/// handler instead gets every delivery already waiting (up to `maximumBatch`, in order) at once,
/// so it can apply them in one transaction; each still gets its own disposition. After every
/// (re)connect the queue and bindings are declared again and `onConnected` runs before the first
/// delivery of that connection, so a cache can drop what it may have missed. Deliveries of a
/// broken connection that were not yet handled are dropped: the broker delivers them again.
public final class AMQPConsumer: LifecycleService, @unchecked Sendable {
  public let name: String
  private let driver: ConnectionDriver
  private let queue: QueueSpec
  private let rpcQueue: String?
  private let prefetch: Int
  private let logger: Logger
  private let handler: @Sendable (AMQPDelivery) async -> (AMQPDisposition, reply: Data?)
  private let batchHandler: (@Sendable ([AMQPDelivery]) async -> [AMQPDisposition])?
  private let maximumBatch: Int
  /// Handlers running at once (RPC servers only; events keep their order with 1). With more
  /// than one, each delivery is acked on its own as its handler finishes.
  private let concurrency: Int
  /// Items yielded by the connection thread and not yet taken by the worker: the worker takes
  /// more into a batch only while this says they are there (so it never waits for one).
  private let buffered = Atomic<Int>(0)
  private let onConnected: (@Sendable () async -> Void)?
  /// A fault drill: the connection loop fails right after the first connection, which must end
  /// `run()` with an error (never set in production).
  private let failsAfterStart: Bool
  private let consumed: Counter?
  private let deadLettered: Counter?
  private let stopping = Atomic<Bool>(false)
  private let worker = Mutex<Task<Void, Never>?>(nil)
  /// Finished when the worker that runs the handlers has returned.
  private let workerEnded = Completion()
  private let declaredName = Mutex<String>("")

  private enum Item: Sendable {
    case connected
    case delivery(AMQPDelivery, tag: UInt64, generation: Int)
  }
  private let stream: AsyncStream<Item>
  private let streamContinuation: AsyncStream<Item>.Continuation

  // Connection-thread state.
  private var generation = 0
  private var ackUpTo: UInt64?
  /// When an RPC server next asks whether its queue still exists.
  private var nextQueueCheck = ContinuousClock.now
  /// How often an RPC server asks: its plain queue dies with the cluster node it lives on, and
  /// RabbitMQ does not tell the consumers on other nodes (no `basic.cancel`), so they would wait
  /// on a queue that is gone while questions go unanswered.
  static let queueCheckInterval: Duration = .seconds(2)

  public convenience init(
    configuration: AMQPConfiguration, queue: QueueSpec, prefetch: Int = 100, logger: Logger,
    metrics: MetricsRegistry, handler: @escaping @Sendable (AMQPDelivery) async -> AMQPDisposition,
    onConnected: (@Sendable () async -> Void)? = nil, failsAfterStart: Bool = false
  ) {
    self.init(
      configuration: configuration, queue: queue, rpcQueue: nil, prefetch: prefetch, logger: logger,
      metrics: metrics, handler: { delivery in (await handler(delivery), nil) }, onConnected: onConnected,
      failsAfterStart: failsAfterStart)
  }

  /// A consumer whose `handler` gets the deliveries waiting at once (1…`maximumBatch`, in
  /// delivery order) and answers one disposition per delivery, in the same order.
  public convenience init(
    configuration: AMQPConfiguration, queue: QueueSpec, prefetch: Int = 100, maximumBatch: Int,
    logger: Logger,
    metrics: MetricsRegistry,
    batchHandler: @escaping @Sendable ([AMQPDelivery]) async -> [AMQPDisposition],
    onConnected: (@Sendable () async -> Void)? = nil, failsAfterStart: Bool = false
  ) {
    self.init(
      configuration: configuration, queue: queue, rpcQueue: nil, prefetch: prefetch, logger: logger,
      metrics: metrics, handler: { delivery in (await batchHandler([delivery]).first ?? .retry, nil) },
      batchHandler: batchHandler, maximumBatch: maximumBatch, onConnected: onConnected,
      failsAfterStart: failsAfterStart)
  }

  /// With `rpcQueue`, declares that plain classic queue instead of `queue` and publishes each
  /// handler's reply to the delivery's `reply_to` before acking (the RPC server).
  init(
    configuration: AMQPConfiguration, queue: QueueSpec, rpcQueue: String?, prefetch: Int, logger: Logger,
    metrics: MetricsRegistry?,
    handler: @escaping @Sendable (AMQPDelivery) async -> (AMQPDisposition, reply: Data?),
    batchHandler: (@Sendable ([AMQPDelivery]) async -> [AMQPDisposition])? = nil, maximumBatch: Int = 1,
    concurrency: Int = 1, onConnected: (@Sendable () async -> Void)?, failsAfterStart: Bool = false
  ) {
    self.failsAfterStart = failsAfterStart
    self.batchHandler = batchHandler
    self.concurrency = rpcQueue == nil ? 1 : max(1, concurrency)
    self.maximumBatch = max(1, maximumBatch)
    self.name = "amqp-consumer-\(rpcQueue ?? queue.name)"
    self.driver = ConnectionDriver(configuration: configuration, logger: logger, metrics: metrics)
    self.queue = queue
    self.rpcQueue = rpcQueue
    self.prefetch = prefetch
    self.logger = logger.with(["amqp.queue": rpcQueue ?? queue.name])
    self.handler = handler
    self.onConnected = onConnected
    let labels = [("queue", rpcQueue ?? queue.name)]
    self.consumed = metrics?.counter(
      "events_consumed_total", help: "Deliveries handled by a consumer.", labels: labels)
    self.deadLettered = metrics?.counter(
      "events_dead_lettered_total", help: "Deliveries sent to the parking queue.", labels: labels)
    (stream, streamContinuation) = AsyncStream.makeStream(of: Item.self)
  }

  public var isConnected: Bool { driver.isConnected }

  /// The broker node (`host:port`) it is connected to; nil while it is not.
  public var connectedNode: String? { driver.connectedNode }

  /// How many times it reconnected to another node than before (a cluster's failovers).
  public var failovers: Int { driver.failovers }

  /// The queue's actual name on the current connection (server-named transient queues differ
  /// per connection).
  public var queueName: String { declaredName.withLock { $0 } }

  public func start() async throws {
    let task = Task { [self] in
      await self.work()
      workerEnded.finish()
    }
    worker.withLock { $0 = task }
    await driver.start(role: self)
  }

  public func waitUntilConnected(timeout: Duration = .seconds(10)) async -> Bool {
    await driver.waitUntilConnected(timeout: timeout)
  }

  /// Lets the handler in progress finish and ack, then closes the connection (the broker
  /// requeues whatever was prefetched but not handled).
  public func shutdown() async {
    stopping.store(true, ordering: .releasing)
    streamContinuation.finish()
    let task = worker.withLock { $0 }
    await task?.value
    await driver.shutdown()
  }

  /// Returns when the worker or the connection thread has ended: either ends the consumer. Throws
  /// `ConnectionLoopEnded` if the connection thread ended without a shutdown (a reconnect after a
  /// lost connection does not end it).
  public func finished() async throws {
    try await Completion.first(of: [workerEnded, driver.stopped])
  }

  private func work() async {
    if concurrency > 1 { return await workConcurrently() }
    var iterator = stream.makeAsyncIterator()
    while let first = await iterator.next() {
      buffered.subtract(1, ordering: .relaxed)
      if stopping.load(ordering: .acquiring) { break }
      var items = [first]
      if batchHandler != nil {
        // Only what is already waiting: never hold a batch back for the next message.
        while items.count < maximumBatch, buffered.load(ordering: .acquiring) > 0,
          let more = await iterator.next()
        {
          buffered.subtract(1, ordering: .relaxed)
          items.append(more)
        }
      }
      var deliveries: [(AMQPDelivery, UInt64, Int)] = []
      for item in items {
        switch item {
        case .connected:
          await handle(deliveries)
          deliveries = []
          await onConnected?()
        case .delivery(let delivery, let tag, let generation):
          guard generation == driver.generation else { continue }
          deliveries.append((delivery, tag, generation))
        }
      }
      await handle(deliveries)
    }
  }

  /// Up to `concurrency` handlers at once, each delivery replied to and acked on its own when its
  /// handler returns (requests to an RPC server are independent of each other).
  private func workConcurrently() async {
    await withTaskGroup(of: Void.self) { group in
      var running = 0
      var iterator = stream.makeAsyncIterator()
      while let item = await iterator.next() {
        buffered.subtract(1, ordering: .relaxed)
        if stopping.load(ordering: .acquiring) { break }
        guard case .delivery(let delivery, let tag, let generation) = item, generation == driver.generation
        else { continue }
        if running >= concurrency {
          await group.next()
          running -= 1
        }
        running += 1
        group.addTask { [self] in
          let (disposition, reply) = await untilNotPaused(generation) { await handler(delivery) }
          consumed?.increment()
          driver.submit { [self] channel in
            try self.settle(tag, generation, disposition, reply: reply, to: delivery, channel, alone: true)
          }
        }
      }
      await group.waitForAll()
    }
  }

  /// Runs the handler on `deliveries` (in order) and hands each disposition to the connection
  /// thread to settle.
  private func handle(_ deliveries: [(AMQPDelivery, UInt64, Int)]) async {
    guard !deliveries.isEmpty else { return }
    var outcomes: [(AMQPDisposition, Data?)] = []
    if let batchHandler, deliveries.count > 1 {
      outcomes = Array(repeating: (.pause, nil), count: deliveries.count)
      // The paused ones go to the handler again (the others are done); acks wait for all, so a
      // `multiple` ack never covers a delivery still paused.
      _ = await untilNotPaused(deliveries[0].2) { () -> (AMQPDisposition, Data?) in
        let paused = outcomes.indices.filter { outcomes[$0].0 == .pause }
        let dispositions = await batchHandler(paused.map { deliveries[$0].0 })
        for (position, index) in paused.enumerated() {
          outcomes[index].0 = dispositions.indices.contains(position) ? dispositions[position] : .retry
        }
        return (outcomes.contains { $0.0 == .pause } ? .pause : .ack, nil)
      }
      for index in outcomes.indices where outcomes[index].0 == .pause { outcomes[index].0 = .retry }
    } else {
      for (delivery, _, generation) in deliveries {
        outcomes.append(await untilNotPaused(generation) { await handler(delivery) })
      }
    }
    for ((delivery, tag, generation), (disposition, reply)) in zip(deliveries, outcomes) {
      consumed?.increment()
      if delivery.deliveryCount > EventTopology.deliveryLimit, case .durableQuorum = queue.kind,
        rpcQueue == nil
      {
        // The broker should have parked it: the queue is not under the dead-letter policy.
        logger.warning(
          "delivered more often than the delivery limit: is the \(EventTopology.deadLetterPolicy) policy set on this vhost? (deploy/local/rabbitmq.sh policy VHOST)",
          ["amqp.delivery_count": String(delivery.deliveryCount)])
      }
      if disposition == .reject || (disposition == .retry && reachedDeliveryLimit(delivery)) {
        deadLettered?.increment()
      }
      driver.submit { [self] channel in
        try self.settle(tag, generation, disposition, reply: reply, to: delivery, channel)
      }
    }
  }

  /// Runs `attempt` until it answers something other than `.pause`, waiting longer between
  /// attempts (0.1 s doubling to 2 s). Gives up with `.retry` once the consumer stops or the
  /// connection that delivered the message is gone (the broker delivers it again anyway).
  private func untilNotPaused(
    _ deliveryGeneration: Int, _ attempt: () async -> (AMQPDisposition, Data?)
  ) async -> (AMQPDisposition, Data?) {
    var outcome = await attempt()
    guard outcome.0 == .pause else { return outcome }
    logger.warning("a dependency is unavailable; the consumer waits and tries the delivery again")
    var delay = Duration.milliseconds(100)
    var attempts = 1
    while outcome.0 == .pause {
      if stopping.load(ordering: .acquiring) || driver.generation != deliveryGeneration {
        return (.retry, nil)
      }
      try? await Task.sleep(for: delay)
      delay = min(delay * 2, .seconds(2))
      attempts += 1
      outcome = await attempt()
    }
    logger.info("the delivery went through after waiting", ["attempts": String(attempts)])
    return outcome
  }

  /// Whether a quorum queue will park this message when it is returned now: the broker
  /// dead-letters once the delivery count exceeds the policy's limit.
  private func reachedDeliveryLimit(_ delivery: AMQPDelivery) -> Bool {
    guard rpcQueue == nil, case .durableQuorum = queue.kind else { return false }
    return delivery.deliveryCount >= EventTopology.deliveryLimit
  }

  /// `alone`: ack this delivery only (handlers finishing out of order), not every earlier one.
  private func settle(
    _ tag: UInt64, _ deliveryGeneration: Int, _ disposition: AMQPDisposition, reply: Data?,
    to delivery: AMQPDelivery, _ channel: AMQPChannel, alone: Bool = false
  ) throws {
    guard deliveryGeneration == generation else { return }
    if let reply, let replyTo = delivery.replyTo {
      try channel.publish(
        exchange: "", routingKey: replyTo, mandatory: false,
        properties: AMQPOutgoingProperties(correlationID: delivery.correlationID, persistent: false),
        body: reply)
    }
    switch disposition {
    case .ack where alone:
      try channel.ack(tag, multiple: false)
    case .ack:
      ackUpTo = tag
    case .retry, .pause:
      try flush(channel)
      try channel.nack(tag, requeue: true)
    case .reject:
      try flush(channel)
      try channel.nack(tag, requeue: false)
    }
  }
}

extension AMQPConsumer: ConnectionRole {
  func setUp(_ channel: AMQPChannel) throws {
    ackUpTo = nil
    let name: String
    if let rpcQueue {
      try channel.declareQueue(rpcQueue, durable: false, exclusive: false, autoDelete: false)
      name = rpcQueue
    } else {
      try channel.declareEventExchanges()
      let declared = try channel.declare(queue)
      name = declared.name
      if declared.classicParking {
        logger.warning(
          "the parking queue exists with other arguments (an older build's classic queue, lost while its node is down?): run `grocer parking migrate`",
          ["amqp.parking_queue": queue.parkingQueueName])
      }
    }
    declaredName.withLock { $0 = name }
    try channel.qos(prefetch: prefetch)
    _ = try channel.consume(queue: name, noAck: false)
  }

  func didConnect(generation: Int) {
    self.generation = generation
    buffered.add(1, ordering: .relaxed)
    streamContinuation.yield(.connected)
    if failsAfterStart && generation == 1 {
      driver.failLoop(
        with: ConnectionLoopEnded(
          connection: driver.configuration.connectionName,
          reason: "fault drill: the consumer's loop failed after it started"))
    }
  }

  func handle(method: amqp_method_t, channel: AMQPChannel) throws {
    switch method.id {
    case GROCER_AMQP_BASIC_DELIVER:
      let deliver = method.decoded.assumingMemoryBound(to: amqp_basic_deliver_t.self).pointee
      let delivery = try channel.readMessage(
        routingKey: AMQPChannel.string(deliver.routing_key) ?? "",
        exchange: AMQPChannel.string(deliver.exchange) ?? "", redelivered: deliver.redelivered != 0)
      buffered.add(1, ordering: .relaxed)
      streamContinuation.yield(.delivery(delivery, tag: deliver.delivery_tag, generation: generation))
    case GROCER_AMQP_BASIC_CANCEL:
      // The queue was deleted or the broker cancelled us: reconnect and declare it again.
      throw AMQPError.brokerClosed(code: 0, text: "consumer cancelled by the broker")
    default:
      logger.debug("consumer ignored a method", ["amqp.method": String(method.id)])
    }
  }

  func check(_ channel: AMQPChannel, now: ContinuousClock.Instant) throws -> Bool {
    guard let rpcQueue, now >= nextQueueCheck else { return false }
    nextQueueCheck = now + Self.queueCheckInterval
    let exists = try channel.refusable(codes: [404]) { side in
      try side.declareQueue(rpcQueue, passive: true, durable: false, exclusive: false, autoDelete: false)
    }
    if exists == nil {
      throw AMQPError.brokerClosed(code: 404, text: "the queue \(rpcQueue) is gone (its node died?)")
    }
    return true
  }

  func flush(_ channel: AMQPChannel) throws {
    guard let tag = ackUpTo else { return }
    ackUpTo = nil
    try channel.ack(tag, multiple: true)
  }

  func failInFlight(_ error: AMQPError) {
    ackUpTo = nil
  }
}

/// Answers requests sent by `AMQPRPCClient`: consumes `queue` (a plain classic queue shared by
/// all replicas), runs the handler, publishes its result to the request's `reply_to` with the
/// same `correlation_id`, then acks.
public final class AMQPRPCServer: LifecycleService, Sendable {
  public var name: String { consumer.name }
  private let consumer: AMQPConsumer

  /// `concurrency`: requests handled at once (each answered and acked as it finishes); 1 answers
  /// them one after another in arrival order.
  public init(
    configuration: AMQPConfiguration, queue: String, prefetch: Int = 100, concurrency: Int = 1,
    logger: Logger, handler: @escaping @Sendable (AMQPDelivery) async -> Data
  ) {
    consumer = AMQPConsumer(
      configuration: configuration, queue: QueueSpec(name: queue, bindingKeys: [], kind: .transient),
      rpcQueue: queue, prefetch: max(prefetch, concurrency), logger: logger, metrics: nil,
      handler: { delivery in (.ack, await handler(delivery)) }, concurrency: concurrency, onConnected: nil)
  }

  public var isConnected: Bool { consumer.isConnected }

  public var connectedNode: String? { consumer.connectedNode }

  public func start() async throws { try await consumer.start() }

  public func waitUntilConnected(timeout: Duration = .seconds(10)) async -> Bool {
    await consumer.waitUntilConnected(timeout: timeout)
  }

  public func shutdown() async { await consumer.shutdown() }

  public func finished() async throws { try await consumer.finished() }
}
