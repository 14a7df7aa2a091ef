import Foundation
import GrocerAMQP
import GrocerCore
import GrocerRabbitMQ
import GrocerRuntime
import GrocerTestSupport
import Testing

/// Tests against the real local RabbitMQ (see `TestBroker`).
@Suite struct BrokerTests {
  init() throws { try TestBroker.ensureRunning() }

  let logger = Logger.discarding()

  @Test func aConfirmedBatchIsConsumedWithItsBodiesAndProperties() async throws {
    let queue = uniqueName("batch")
    let key = "\(queue).created"
    let metrics = MetricsRegistry()
    let received = Recorder<AMQPDelivery>()
    let consumer = AMQPConsumer(
      configuration: TestBroker.configuration(), queue: QueueSpec(name: queue, bindingKeys: [key]),
      logger: logger, metrics: metrics,
      handler: {
        received.append($0); return .ack
      })
    try await consumer.start()
    #expect(consumer.isConnected)
    let publisher = AMQPPublisher(configuration: TestBroker.configuration(), logger: logger, metrics: metrics)
    try await publisher.start()
    #expect(publisher.isConnected)

    let messages = (0..<300).map { message(key, $0) }
    try await publisher.publish(messages)
    #expect(await eventually { received.count >= 300 })

    let deliveries = received.all
    #expect(deliveries.count == 300)
    #expect(deliveries.map(\.body) == messages.map(\.body))
    let first = try #require(deliveries.first)
    #expect(first.messageID == "m-0")
    #expect(first.type == key)
    #expect(first.correlationID == "c-0")
    #expect(first.routingKey == key)
    #expect(first.exchange == EventTopology.exchange)
    #expect(!first.redelivered)
    #expect(first.deliveryCount == 0)
    #expect(metrics.counter("amqp_messages_confirmed_total", help: "").value == 300)
    #expect(
      await eventually {
        metrics.counter("events_consumed_total", help: "", labels: [("queue", queue)]).value == 300
      })

    await consumer.shutdown()
    await publisher.shutdown()
    // Everything was acked: nothing is left in the queue.
    #expect(try await AMQPAdmin.messageCount(configuration: TestBroker.configuration(), queue: queue) == 0)
    try await AMQPAdmin.deleteQueues(configuration: TestBroker.configuration(), [queue, "\(queue).parking"])
  }

  @Test func aRetriedDeliveryIsRedelivered() async throws {
    let queue = uniqueName("retry")
    let received = Recorder<AMQPDelivery>()
    let consumer = AMQPConsumer(
      configuration: TestBroker.configuration(), queue: QueueSpec(name: queue, bindingKeys: [queue]),
      logger: logger, metrics: MetricsRegistry(),
      handler: { delivery in
        received.append(delivery)
        return received.count == 1 ? .retry : .ack
      })
    try await consumer.start()
    let publisher = AMQPPublisher(
      configuration: TestBroker.configuration(), logger: logger, metrics: MetricsRegistry())
    try await publisher.start()
    try await publisher.publish([message(queue, 1)])

    #expect(await eventually { received.count >= 2 })
    try await Task.sleep(for: .milliseconds(200))
    let deliveries = received.all
    #expect(deliveries.count == 2)
    #expect(deliveries.map(\.messageID) == ["m-1", "m-1"])
    #expect(deliveries.map(\.redelivered) == [false, true])
    #expect(deliveries.map(\.deliveryCount) == [0, 1])

    await consumer.shutdown()
    await publisher.shutdown()
    try await AMQPAdmin.deleteQueues(configuration: TestBroker.configuration(), [queue, "\(queue).parking"])
  }

  @Test func aPoisonMessageIsParkedAfterTheDeliveryLimitWithoutBlockingTheNextOne() async throws {
    let queue = uniqueName("poison")
    let limit = EventTopology.deliveryLimit
    let metrics = MetricsRegistry()
    let poisonAttempts = Recorder<Int>()
    let good = Recorder<String>()
    let consumer = AMQPConsumer(
      configuration: TestBroker.configuration(),
      queue: QueueSpec(name: queue, bindingKeys: [queue], kind: .durableQuorum()),
      prefetch: 1, logger: logger, metrics: metrics,
      handler: { delivery in
        if delivery.messageID == "m-0" {
          poisonAttempts.append(delivery.deliveryCount)
          return .retry
        }
        good.append(delivery.messageID ?? "")
        return .ack
      })
    try await consumer.start()
    let publisher = AMQPPublisher(configuration: TestBroker.configuration(), logger: logger, metrics: metrics)
    try await publisher.start()
    try await publisher.publish([message(queue, 0), message(queue, 1)])

    let configuration = TestBroker.configuration()
    #expect(await eventually { good.all == ["m-1"] })
    #expect(
      try await eventually {
        try await AMQPAdmin.messageCount(configuration: configuration, queue: "\(queue).parking") == 1
      })
    // Delivered once plus `limit` redeliveries, then dead-lettered.
    #expect(poisonAttempts.all == Array(0...limit))
    #expect(metrics.counter("events_dead_lettered_total", help: "", labels: [("queue", queue)]).value == 1)
    #expect(try await AMQPAdmin.messageCount(configuration: configuration, queue: queue) == 0)

    await consumer.shutdown()
    await publisher.shutdown()
    try await AMQPAdmin.deleteQueues(configuration: configuration, [queue, "\(queue).parking"])
  }

  /// `.pause` (the database is down) keeps the delivery here: the handler gets it again, more
  /// often than the delivery limit allows returns, and the next message waits its turn.
  @Test func aPausedDeliveryIsTriedAgainHereWithoutUsingUpItsDeliveryLimit() async throws {
    let queue = uniqueName("pause")
    let pauses = EventTopology.deliveryLimit + 1
    let handled = Recorder<String>()
    let counts = Recorder<Int>()
    let consumer = AMQPConsumer(
      configuration: TestBroker.configuration(),
      queue: QueueSpec(name: queue, bindingKeys: [queue], kind: .durableQuorum()),
      logger: logger, metrics: MetricsRegistry(),
      handler: { delivery in
        handled.append(delivery.messageID ?? "")
        guard delivery.messageID == "m-0" else { return .ack }
        counts.append(delivery.deliveryCount)
        return counts.count <= pauses ? .pause : .ack
      })
    try await consumer.start()
    let publisher = AMQPPublisher(
      configuration: TestBroker.configuration(), logger: logger, metrics: MetricsRegistry())
    try await publisher.start()
    try await publisher.publish([message(queue, 0), message(queue, 1)])

    #expect(await eventually(timeout: .seconds(15)) { handled.all.contains("m-1") })
    #expect(handled.all == Array(repeating: "m-0", count: pauses + 1) + ["m-1"])
    #expect(counts.all == Array(repeating: 0, count: pauses + 1), "never returned to the broker")
    try await expectDrainedWithNothingParked(queue, consumer, publisher)
  }

  /// In a batch only the paused deliveries go to the handler again; all are acked once they
  /// went through, none parked.
  @Test func aBatchHandlerGetsOnlyItsPausedDeliveriesAgain() async throws {
    let queue = uniqueName("batch-pause")
    let configuration = TestBroker.configuration()
    let spec = QueueSpec(name: queue, bindingKeys: [queue], kind: .durableQuorum())
    let publisher = AMQPPublisher(configuration: configuration, logger: logger, metrics: MetricsRegistry())
    try await publisher.start()
    try await declare(spec)
    try await publisher.publish((0..<20).map { message(queue, $0) })
    let batches = Recorder<[String]>()
    let consumer = AMQPConsumer(
      configuration: configuration, queue: spec, maximumBatch: 20, logger: logger,
      metrics: MetricsRegistry(),
      batchHandler: { deliveries in
        batches.append(deliveries.map { $0.messageID ?? "" })
        let paused = batches.all.filter { $0.contains("m-3") }.count <= 3
        return deliveries.map { $0.messageID == "m-3" && paused ? .pause : .ack }
      })
    try await consumer.start()

    let handled = { @Sendable in batches.all.flatMap { $0 } }
    #expect(await eventually { Set(handled()).count == 20 && handled().filter { $0 == "m-3" }.count == 4 })
    try await Task.sleep(for: .milliseconds(200))
    #expect(batches.all.contains { $0.count > 1 }, "waiting deliveries came together: \(batches.all)")
    let first = try #require(batches.all.firstIndex { $0.contains("m-3") })
    #expect(batches.all.dropFirst(first + 1).prefix(3).allSatisfy { $0 == ["m-3"] }, "\(batches.all)")
    #expect(handled().count == 23, "the others went to the handler once: \(batches.all)")
    try await expectDrainedWithNothingParked(queue, consumer, publisher)
  }

  /// Declares `spec` (with its bindings) through a consumer that leaves at once, so what is
  /// published next waits in the queue.
  func declare(_ spec: QueueSpec) async throws {
    let declare = AMQPConsumer(
      configuration: TestBroker.configuration(), queue: spec, logger: logger, metrics: MetricsRegistry(),
      handler: { _ in .retry })
    try await declare.start()
    #expect(await declare.waitUntilConnected())
    await declare.shutdown()
  }

  /// Expects `queue` to drain with nothing in its parking queue, then stops both and deletes them.
  func expectDrainedWithNothingParked(
    _ queue: String, _ consumer: AMQPConsumer, _ publisher: AMQPPublisher
  ) async throws {
    let configuration = TestBroker.configuration()
    #expect(
      try await eventually {
        try await AMQPAdmin.messageCount(configuration: configuration, queue: queue) == 0
      })
    #expect(try await AMQPAdmin.messageCount(configuration: configuration, queue: "\(queue).parking") == 0)
    await consumer.shutdown()
    await publisher.shutdown()
    try await AMQPAdmin.deleteQueues(configuration: configuration, [queue, "\(queue).parking"])
  }

  /// A batch handler sees the deliveries already waiting together, in delivery order; each is
  /// settled on its own: acks go, a reject is parked, a retry comes back (alone or in a batch).
  @Test func aBatchHandlerGetsWaitingDeliveriesTogetherAndSettlesEachOnItsOwn() async throws {
    let queue = uniqueName("batch")
    let metrics = MetricsRegistry()
    let batches = Recorder<[String]>()
    let retried = Recorder<Int>()
    // Messages are published before the consumer starts, so they are waiting when it does.
    let publisher = AMQPPublisher(configuration: TestBroker.configuration(), logger: logger, metrics: metrics)
    try await publisher.start()
    try await declare(QueueSpec(name: queue, bindingKeys: [queue], kind: .durableQuorum()))
    try await publisher.publish((0..<60).map { message(queue, $0) })
    let consumer = AMQPConsumer(
      configuration: TestBroker.configuration(),
      queue: QueueSpec(name: queue, bindingKeys: [queue], kind: .durableQuorum()),
      prefetch: 100, maximumBatch: 25, logger: logger, metrics: metrics,
      batchHandler: { deliveries in
        batches.append(deliveries.map { $0.messageID ?? "" })
        return deliveries.map { delivery in
          switch delivery.messageID {
          case "m-7": return .reject
          case "m-8":
            retried.append(delivery.deliveryCount)
            return delivery.deliveryCount == 0 ? .retry : .ack
          default: return .ack
          }
        }
      })
    try await consumer.start()
    let configuration = TestBroker.configuration()
    let seen: @Sendable () -> Set<String> = { Set(batches.all.flatMap { $0 }) }
    #expect(await eventually { seen().count == 60 && retried.count == 2 })
    #expect(batches.all.allSatisfy { $0.count <= 25 })
    #expect(
      batches.all.contains { $0.count > 1 }, "waiting deliveries came together: \(batches.all.map(\.count))")
    let firstRound = batches.all.flatMap { $0 }.filter { $0 != "m-8" }
    #expect(
      firstRound == firstRound.sorted { Int($0.dropFirst(2))! < Int($1.dropFirst(2))! }, "in delivery order")
    #expect(
      try await eventually {
        try await AMQPAdmin.messageCount(configuration: configuration, queue: "\(queue).parking") == 1
      })
    #expect(
      try await eventually {
        try await AMQPAdmin.messageCount(configuration: configuration, queue: queue) == 0
      })
    await consumer.shutdown()
    await publisher.shutdown()
    try await AMQPAdmin.deleteQueues(configuration: configuration, [queue, "\(queue).parking"])
  }

  @Test func aRejectedMessageIsDeadLetteredAtOnce() async throws {
    let queue = uniqueName("reject")
    let metrics = MetricsRegistry()
    let attempts = Recorder<String>()
    let consumer = AMQPConsumer(
      configuration: TestBroker.configuration(), queue: QueueSpec(name: queue, bindingKeys: [queue]),
      logger: logger, metrics: metrics,
      handler: { delivery in
        attempts.append(delivery.messageID ?? "")
        return .reject
      })
    try await consumer.start()
    let publisher = AMQPPublisher(configuration: TestBroker.configuration(), logger: logger, metrics: metrics)
    try await publisher.start()
    try await publisher.publish([message(queue, 7)])

    let configuration = TestBroker.configuration()
    #expect(
      try await eventually {
        try await AMQPAdmin.messageCount(configuration: configuration, queue: "\(queue).parking") == 1
      })
    try await Task.sleep(for: .milliseconds(200))
    #expect(attempts.all == ["m-7"])
    #expect(metrics.counter("events_dead_lettered_total", help: "", labels: [("queue", queue)]).value == 1)

    await consumer.shutdown()
    await publisher.shutdown()
    try await AMQPAdmin.deleteQueues(configuration: configuration, [queue, "\(queue).parking"])
  }

  @Test func everyTransientReplicaQueueReceivesEveryEvent() async throws {
    let key = uniqueName("fanout")
    let first = Recorder<String>()
    let second = Recorder<String>()
    let connects = Recorder<Int>()
    func replica(_ recorder: Recorder<String>) -> AMQPConsumer {
      AMQPConsumer(
        configuration: TestBroker.configuration(),
        queue: QueueSpec(name: "", bindingKeys: ["\(key).#"], kind: .transient),
        logger: logger, metrics: MetricsRegistry(),
        handler: { delivery in
          recorder.append(delivery.messageID ?? "")
          return .ack
        },
        onConnected: { connects.append(1) })
    }
    let replicas = [replica(first), replica(second)]
    for consumer in replicas { try await consumer.start() }
    #expect(replicas[0].queueName != replicas[1].queueName)
    #expect(replicas[0].queueName.hasPrefix("amq.gen-"))
    let publisher = AMQPPublisher(
      configuration: TestBroker.configuration(), logger: logger, metrics: MetricsRegistry())
    try await publisher.start()
    try await publisher.publish((0..<3).map { message("\(key).changed", $0) })

    #expect(await eventually { first.count == 3 && second.count == 3 })
    #expect(first.all == ["m-0", "m-1", "m-2"])
    #expect(second.all == ["m-0", "m-1", "m-2"])
    #expect(connects.count == 2)

    for consumer in replicas { await consumer.shutdown() }
    await publisher.shutdown()
  }

  @Test func anRPCRequestGetsItsReplyEvenWithManyInFlight() async throws {
    let queue = uniqueName("rpc")
    let server = AMQPRPCServer(
      configuration: TestBroker.configuration(), queue: queue, logger: logger,
      handler: { delivery in Data("echo:".utf8) + delivery.body })
    try await server.start()
    #expect(server.isConnected)
    let client = AMQPRPCClient(configuration: TestBroker.configuration(), logger: logger)
    try await client.start()

    let reply = try await client.request(routingKey: queue, body: Data("hi".utf8), timeout: .seconds(5))
    #expect(String(decoding: reply, as: UTF8.self) == "echo:hi")

    let replies = try await withThrowingTaskGroup(of: (Int, String).self) { group in
      for index in 0..<50 {
        group.addTask {
          let body = try await client.request(
            routingKey: queue, body: Data("\(index)".utf8), timeout: .seconds(5))
          return (index, String(decoding: body, as: UTF8.self))
        }
      }
      var all: [Int: String] = [:]
      for try await (index, text) in group { all[index] = text }
      return all
    }
    #expect(replies.count == 50)
    #expect(replies.allSatisfy { index, text in text == "echo:\(index)" })

    await client.shutdown()
    await server.shutdown()
    try await AMQPAdmin.deleteQueues(configuration: TestBroker.configuration(), [queue])
  }

  @Test func aConcurrentRPCServerAnswersAFastRequestWhileASlowOneRunsAndLosesNone() async throws {
    let queue = uniqueName("rpc-concurrent")
    let running = Recorder<String>()
    let server = AMQPRPCServer(
      configuration: TestBroker.configuration(), queue: queue, concurrency: 8, logger: logger,
      handler: { delivery in
        let text = String(decoding: delivery.body, as: UTF8.self)
        running.append(text)
        if text == "slow" { try? await Task.sleep(for: .seconds(2)) }
        return Data("echo:".utf8) + delivery.body
      })
    try await server.start()
    let client = AMQPRPCClient(configuration: TestBroker.configuration(), logger: logger)
    try await client.start()

    // The slow request is handled first; the fast one behind it is answered long before.
    let slow = Task {
      try await client.request(routingKey: queue, body: Data("slow".utf8), timeout: .seconds(10))
    }
    #expect(await eventually { running.all.contains("slow") })
    let started = ContinuousClock.now
    let fast = try await client.request(routingKey: queue, body: Data("fast".utf8), timeout: .seconds(5))
    #expect(String(decoding: fast, as: UTF8.self) == "echo:fast")
    #expect(ContinuousClock.now - started < .seconds(1))

    // Many at once: each gets its own reply.
    let replies = try await withThrowingTaskGroup(of: (Int, String).self) { group in
      for index in 0..<100 {
        group.addTask {
          let body = try await client.request(
            routingKey: queue, body: Data("\(index)".utf8), timeout: .seconds(10))
          return (index, String(decoding: body, as: UTF8.self))
        }
      }
      var all: [Int: String] = [:]
      for try await (index, text) in group { all[index] = text }
      return all
    }
    #expect(replies.count == 100)
    #expect(replies.allSatisfy { index, text in text == "echo:\(index)" })
    #expect(String(decoding: try await slow.value, as: UTF8.self) == "echo:slow")

    await client.shutdown()
    await server.shutdown()
    // Every request was acked: nothing is left on the queue.
    #expect(try await AMQPAdmin.messageCount(configuration: TestBroker.configuration(), queue: queue) == 0)
    try await AMQPAdmin.deleteQueues(configuration: TestBroker.configuration(), [queue])
  }

  @Test func anRPCRequestNobodyAnswersTimesOut() async throws {
    let client = AMQPRPCClient(configuration: TestBroker.configuration(), logger: logger)
    try await client.start()
    // A queue with no server on it: the request waits there, unanswered.
    let queue = uniqueName("nobody")
    try await AMQPAdmin.declareQuorumQueue(configuration: TestBroker.configuration(), queue)
    let started = ContinuousClock.now
    await #expect(throws: AMQPError.timeout) {
      _ = try await client.request(routingKey: queue, body: Data(), timeout: .milliseconds(300))
    }
    let elapsed = ContinuousClock.now - started
    #expect(elapsed >= .milliseconds(300))
    #expect(elapsed < .seconds(2))
    #expect(client.isConnected)
    await client.shutdown()
    try await AMQPAdmin.deleteQueues(configuration: TestBroker.configuration(), [queue])
  }

  /// A request for a queue that does not exist (gone with its node) comes back at once.
  @Test func anRPCRequestToNoQueueIsReturnedAtOnce() async throws {
    let client = AMQPRPCClient(configuration: TestBroker.configuration(), logger: logger)
    try await client.start()
    let started = ContinuousClock.now
    do {
      _ = try await client.request(routingKey: uniqueName("no-queue"), body: Data(), timeout: .seconds(5))
      Issue.record("a request to no queue was answered")
    } catch AMQPError.unroutable {
    } catch {
      Issue.record("expected unroutable, got \(error)")
    }
    #expect(ContinuousClock.now - started < .seconds(2))
    #expect(client.isConnected)
    await client.shutdown()
  }

  @Test func publishingWhileDisconnectedFailsAtOnce() async throws {
    var configuration = TestBroker.configuration()
    configuration.url = "amqp://guest:guest@127.0.0.1:1/"
    configuration.connectTimeout = .milliseconds(500)
    let publisher = AMQPPublisher(configuration: configuration, logger: logger, metrics: MetricsRegistry())
    try await publisher.start()
    #expect(!publisher.isConnected)
    await #expect(throws: AMQPError.notConnected) {
      try await publisher.publish([message("x", 0)])
    }
    let client = AMQPRPCClient(configuration: configuration, logger: logger)
    try await client.start()
    await #expect(throws: AMQPError.notConnected) {
      _ = try await client.request(routingKey: "x", body: Data(), timeout: .seconds(5))
    }
    await client.shutdown()
    await publisher.shutdown()
  }

  @Test func thePublisherReconnectsAfterTheBrokerClosedItsConnection() async throws {
    let queue = uniqueName("reconnect")
    let connectionName = "grocer-test-\(UUID().uuidString)"
    let received = Recorder<String>()
    let connects = Recorder<Int>()
    let consumer = AMQPConsumer(
      configuration: TestBroker.configuration(), queue: QueueSpec(name: queue, bindingKeys: [queue]),
      logger: logger, metrics: MetricsRegistry(),
      handler: { delivery in
        received.append(delivery.messageID ?? "")
        return .ack
      })
    try await consumer.start()
    let publisher = AMQPPublisher(
      configuration: TestBroker.configuration(connectionName), logger: logger, metrics: MetricsRegistry())
    try await publisher.start()
    try await publisher.publish([message(queue, 1)])

    // The broker needs a moment to list a new connection.
    #expect(try await eventually { try await TestBroker.closeConnections(named: connectionName) == 1 })
    // The close arrives as a frame: the publisher notices, reconnects and publishes again.
    #expect(await eventually { await publisher.waitUntilConnected(timeout: .seconds(1)) })
    var published = false
    for _ in 0..<50 where !published {
      do {
        try await publisher.publish([message(queue, 2)])
        published = true
      } catch {
        connects.append(1)
        try await Task.sleep(for: .milliseconds(100))
      }
    }
    #expect(published)
    #expect(await eventually { received.all == ["m-1", "m-2"] })

    await consumer.shutdown()
    await publisher.shutdown()
    try await AMQPAdmin.deleteQueues(configuration: TestBroker.configuration(), [queue, "\(queue).parking"])
  }

  @Test func aConsumerReconnectsAndRunsOnConnectedAgain() async throws {
    let queue = uniqueName("consumer-reconnect")
    let connectionName = "grocer-test-\(UUID().uuidString)"
    let received = Recorder<String>()
    let connects = Recorder<Int>()
    let consumer = AMQPConsumer(
      configuration: TestBroker.configuration(connectionName),
      queue: QueueSpec(name: queue, bindingKeys: [queue]),
      logger: logger, metrics: MetricsRegistry(),
      handler: { delivery in
        received.append(delivery.messageID ?? "")
        return .ack
      },
      onConnected: { connects.append(1) })
    try await consumer.start()
    #expect(await eventually { connects.count == 1 })
    #expect(try await eventually { try await TestBroker.closeConnections(named: connectionName) == 1 })
    #expect(await eventually { connects.count == 2 })

    let publisher = AMQPPublisher(
      configuration: TestBroker.configuration(), logger: logger, metrics: MetricsRegistry())
    try await publisher.start()
    try await publisher.publish([message(queue, 3)])
    #expect(await eventually { received.all == ["m-3"] })

    await consumer.shutdown()
    await publisher.shutdown()
    try await AMQPAdmin.deleteQueues(configuration: TestBroker.configuration(), [queue, "\(queue).parking"])
  }

  @Test func shutdownLetsTheRunningHandlerFinishAndAcks() async throws {
    let queue = uniqueName("drain")
    let started = Recorder<String>()
    let finished = Recorder<String>()
    let consumer = AMQPConsumer(
      configuration: TestBroker.configuration(), queue: QueueSpec(name: queue, bindingKeys: [queue]),
      prefetch: 1, logger: logger, metrics: MetricsRegistry(),
      handler: { delivery in
        started.append(delivery.messageID ?? "")
        try? await Task.sleep(for: .milliseconds(300))
        finished.append(delivery.messageID ?? "")
        return .ack
      })
    try await consumer.start()
    let publisher = AMQPPublisher(
      configuration: TestBroker.configuration(), logger: logger, metrics: MetricsRegistry())
    try await publisher.start()
    try await publisher.publish([message(queue, 1), message(queue, 2)])
    #expect(await eventually { started.count == 1 })
    await consumer.shutdown()
    #expect(finished.all == ["m-1"])

    // m-1 was acked before the connection closed; m-2 went back to the queue.
    let configuration = TestBroker.configuration()
    #expect(
      try await eventually {
        try await AMQPAdmin.messageCount(configuration: configuration, queue: queue) == 1
      })
    await publisher.shutdown()
    try await AMQPAdmin.deleteQueues(configuration: configuration, [queue, "\(queue).parking"])
  }

  @Test func aMandatoryMessageThatMatchesNoQueueFailsThePublish() async throws {
    let publisher = AMQPPublisher(
      configuration: TestBroker.configuration(), mandatory: true, logger: logger, metrics: MetricsRegistry())
    try await publisher.start()
    await #expect(throws: AMQPError.unroutable(messageID: "m-5")) {
      try await publisher.publish([message(uniqueName("nobody"), 5)])
    }
    #expect(publisher.isConnected)
    await publisher.shutdown()
  }

  /// Not a pass/fail timing check: prints the confirmed publish rate for the report.
  @Test func measureConfirmedPublishRate() async throws {
    let queue = uniqueName("rate")
    let key = "\(queue).measured"
    let configuration = TestBroker.configuration()
    // Declare the bound quorum queue (a consumer that starts and stops at once).
    let declarer = AMQPConsumer(
      configuration: configuration, queue: QueueSpec(name: queue, bindingKeys: [key]), prefetch: 1,
      logger: logger, metrics: MetricsRegistry(), handler: { _ in .retry })
    try await declarer.start()
    await declarer.shutdown()

    let publisher = AMQPPublisher(configuration: configuration, logger: logger, metrics: MetricsRegistry())
    try await publisher.start()
    let batches = 40
    let batchSize = 500
    let messages = (0..<batchSize).map { message(key, $0, size: 1024) }
    try await publisher.publish(messages)  // warm-up

    var started = ContinuousClock.now
    for _ in 0..<batches { try await publisher.publish(messages) }
    let sequential = Self.rate(batches * batchSize, since: started)

    // The same number of batches, four at a time on the one connection.
    started = ContinuousClock.now
    try await withThrowingTaskGroup(of: Void.self) { group in
      for _ in 0..<4 {
        group.addTask { for _ in 0..<(batches / 4) { try await publisher.publish(messages) } }
      }
      try await group.waitForAll()
    }
    let concurrent = Self.rate(batches * batchSize, since: started)
    print(
      "confirmed publish rate (\(batches) batches of \(batchSize) × 1 KB, quorum queue):",
      "\(sequential) msgs/s one batch at a time, \(concurrent) msgs/s four batches at a time")
    #expect(
      try await eventually {
        try await AMQPAdmin.messageCount(configuration: configuration, queue: queue)
          == (2 * batches + 1) * batchSize
      })
    await publisher.shutdown()
    try await AMQPAdmin.deleteQueues(configuration: configuration, [queue, "\(queue).parking"])
  }
}

extension BrokerTests {
  static func rate(_ count: Int, since started: ContinuousClock.Instant) -> Int {
    let elapsed = ContinuousClock.now - started
    let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
    return Int(Double(count) / seconds)
  }
}

@Suite struct HeartbeatTests {
  init() throws { try TestBroker.ensureRunning() }

  @Test func aHungBrokerIsDetectedByHeartbeatsAndInFlightPublishesFail() async throws {
    let proxy = try FreezableProxy()
    var configuration = TestBroker.configuration()
    configuration.url = "amqp://guest:guest@127.0.0.1:\(proxy.port)/"
    configuration.heartbeat = 1
    configuration.publishTimeout = .seconds(30)
    let publisher = AMQPPublisher(
      configuration: configuration, logger: .discarding(), metrics: MetricsRegistry())
    try await publisher.start()
    #expect(publisher.isConnected)
    try await publisher.publish([message("nowhere", 0)])

    proxy.freeze()
    let started = ContinuousClock.now
    let error = await #expect(throws: AMQPError.self) {
      try await publisher.publish([message("nowhere", 1)])
    }
    // librabbitmq or our own watchdog notices first; either way it is a lost connection.
    guard case .connectionLost(let reason) = error else {
      Issue.record("expected a lost connection, got \(String(describing: error))")
      return
    }
    #expect(reason.contains("heartbeat"))
    let detectedAfter = ContinuousClock.now - started
    #expect(detectedAfter < .seconds(5))
    #expect(!publisher.isConnected)

    proxy.thaw()
    #expect(await publisher.waitUntilConnected(timeout: .seconds(10)))
    try await publisher.publish([message("nowhere", 2)])

    await publisher.shutdown()
    await proxy.stop()
  }

  /// An idle RPC server asks the broker every 2 s whether its queue is still there; a broker that
  /// answers that often sends no heartbeats, and the answers, read inside librabbitmq, must count
  /// as hearing from it (they did not: every idle checkout connection was dropped after 25 s).
  @Test func anIdleRPCServerKeepsItsConnectionPastTwoHeartbeats() async throws {
    let queue = uniqueName("idle-rpc")
    var configuration = TestBroker.configuration()
    configuration.heartbeat = 5
    let sink = LogSink.memory()
    let server = AMQPRPCServer(
      configuration: configuration, queue: queue, logger: Logger(label: "test", level: .warning, sink: sink),
      handler: { $0.body })
    try await server.start()
    try await Task.sleep(for: .seconds(13))
    #expect(server.isConnected)
    #expect(sink.lines.isEmpty, "\(sink.lines)")
    await server.shutdown()
    try await AMQPAdmin.deleteQueues(configuration: TestBroker.configuration(), [queue])
  }
}
