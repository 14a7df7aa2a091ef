import Foundation
import GrocerAMQP
import GrocerCore
import GrocerOps
import GrocerRabbitMQ
import GrocerRuntime
import GrocerTestSupport
import Testing

/// `queues`, `dead-letters` and `republish` against the real local RabbitMQ (`TestBroker`), each
/// test on queues of its own, deleted at the end.
@Suite struct BrokerOpsTests {
  init() throws { try TestBroker.ensureRunning() }

  let logger = Logger.discarding()
  let configuration = TestBroker.configuration("grocer-ops-tests")

  /// A service-like quorum queue bound to `key` whose consumer rejects everything: one message
  /// published with `key` ends in `<queue>.parking`, dead-lettered as a poison message is.
  func parkPoisonMessage(queue: String, key: String, id: String) async throws {
    let consumer = AMQPConsumer(
      configuration: configuration,
      queue: QueueSpec(name: queue, bindingKeys: [key], kind: .durableQuorum(expiresAfter: .seconds(600))),
      prefetch: 1, logger: logger, metrics: MetricsRegistry(), handler: { _ in .reject })
    try await consumer.start()
    let publisher = AMQPPublisher(configuration: configuration, logger: logger, metrics: MetricsRegistry())
    try await publisher.start()
    try await publisher.publish([
      OutgoingMessage(
        messageID: id, routingKey: key, type: key, body: Data("{\"poison\":true}".utf8),
        timestamp: Date(timeIntervalSince1970: 1_700_000_000), correlationID: "corr-1")
    ])
    let parked = try await eventually {
      try await AMQPAdmin.messageCount(configuration: configuration, queue: "\(queue).parking") == 1
    }
    await consumer.shutdown()
    await publisher.shutdown()
    try #require(parked)
  }

  func cleanUp(_ queues: [String]) async {
    try? await AMQPAdmin.deleteQueues(configuration: configuration, queues)
  }

  @Test func deadLettersShowsAParkedMessageWithoutRemovingIt() async throws {
    let queue = uniqueName("ops-peek")
    try await withCleanup({ await cleanUp([queue, "\(queue).parking"]) }) {
      try await parkPoisonMessage(queue: queue, key: "\(queue).happened", id: "poison-1")

      let (status, output) = await runGrocer(["dead-letters", queue])
      #expect(status == 0, "\(output.err)")
      #expect(output.out.contains("\(queue).parking: 1 message"))
      #expect(output.out.contains("message id   poison-1"))
      #expect(output.out.contains("type         \(queue).happened"))
      #expect(output.out.contains("rejected in \(queue)"))
      #expect(output.out.contains("{\"poison\":true}"))
      #expect(output.out.contains("2023-11-14T22:13:20Z"))
      // Still there, and shown again.
      #expect(try await AMQPAdmin.messageCount(configuration: configuration, queue: "\(queue).parking") == 1)
      let (again, second) = await runGrocer(["dead-letters", "\(queue).parking"])
      #expect(again == 0)
      #expect(second.out.contains("poison-1"))
    }
  }

  @Test func republishSendsTheMessageBackToTheExchangeAndEmptiesTheParkingQueue() async throws {
    let queue = uniqueName("ops-republish")
    let witness = uniqueName("ops-witness")
    let key = "\(queue).happened"
    try await withCleanup({ await cleanUp([queue, "\(queue).parking", witness, "\(witness).parking"]) }) {
      try await parkPoisonMessage(queue: queue, key: key, id: "poison-2")
      let received = Recorder<AMQPDelivery>()
      let witnessConsumer = AMQPConsumer(
        configuration: configuration,
        queue: QueueSpec(
          name: witness, bindingKeys: [key], kind: .durableQuorum(expiresAfter: .seconds(600))),
        logger: logger, metrics: MetricsRegistry(),
        handler: { delivery in
          received.append(delivery)
          return .ack
        })
      try await witnessConsumer.start()

      // An id that is not there: nothing moves.
      let (missing, missingOutput) = await runGrocer(["republish", queue, "--message-id", "nope"])
      #expect(missing == 1)
      #expect(missingOutput.err.contains("no message nope"))
      #expect(try await AMQPAdmin.messageCount(configuration: configuration, queue: "\(queue).parking") == 1)

      let (status, output) = await runGrocer(["republish", queue, "--message-id", "poison-2"])
      #expect(status == 0, "\(output.err)")
      #expect(output.out.contains("republished 1 of 1"))
      #expect(await eventually { received.count == 1 })
      let delivery = try #require(received.all.first)
      #expect(delivery.messageID == "poison-2")
      #expect(delivery.type == key)
      #expect(delivery.routingKey == key)
      #expect(delivery.correlationID == "corr-1")
      #expect(delivery.body == Data("{\"poison\":true}".utf8))
      #expect(try await AMQPAdmin.messageCount(configuration: configuration, queue: "\(queue).parking") == 0)
      await witnessConsumer.shutdown()
    }
  }

  @Test func republishAllWithNothingBoundLeavesTheMessageParked() async throws {
    let queue = uniqueName("ops-unroutable")
    try await withCleanup({ await cleanUp([queue, "\(queue).parking"]) }) {
      try await parkPoisonMessage(queue: queue, key: "\(queue).happened", id: "poison-3")
      // Nothing may be bound to the key for this: the original queue goes first.
      try await AMQPAdmin.deleteQueues(configuration: configuration, [queue])

      let (status, output) = await runGrocer(["republish", queue, "--all"])
      #expect(status == 1)
      #expect(output.err.contains("poison-3"))
      #expect(try await AMQPAdmin.messageCount(configuration: configuration, queue: "\(queue).parking") == 1)
    }
  }

  @Test func queuesListsAFreshQueueWithItsCounts() async throws {
    let queue = uniqueName("ops-queues")
    try await withCleanup({ await cleanUp([queue, "\(queue).parking"]) }) {
      try await parkPoisonMessage(queue: queue, key: "\(queue).happened", id: "poison-4")

      let (status, output) = await runGrocer(["queues", queue])
      #expect(status == 0, "\(output.err)")
      let lines = output.out.split(separator: "\n").map { $0.split(separator: " ").map(String.init) }
      #expect(lines.first == ["QUEUE", "READY", "UNACKED", "CONSUMERS"])
      #expect(lines.contains([queue, "0", "0", "0"]))
      #expect(lines.contains(["\(queue).parking", "1", "0", "0", "parking", "!"]))
      #expect(lines.count == 3)
    }
  }
}
