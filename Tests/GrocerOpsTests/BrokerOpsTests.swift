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
  func parkPoisonMessage(queue: String, key: String, id: String, expecting parked: Int = 1) async throws {
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
    let arrived = try await eventually {
      try await AMQPAdmin.messageCount(configuration: configuration, queue: "\(queue).parking") == parked
    }
    await consumer.shutdown()
    await publisher.shutdown()
    try #require(arrived)
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

      // A quorum queue's counts reach the listing a moment after the message.
      let listed = await eventually {
        await runGrocer(["queues", queue]).1.out.contains("parking !")
      }
      #expect(listed)
      let (status, output) = await runGrocer(["queues", queue])
      #expect(status == 0, "\(output.err)")
      let lines = output.out.split(separator: "\n").map { $0.split(separator: " ").map(String.init) }
      #expect(lines.first == ["QUEUE", "READY", "UNACKED", "CONSUMERS"])
      #expect(lines.contains([queue, "0", "0", "0"]))
      #expect(lines.contains(["\(queue).parking", "1", "0", "0", "parking", "!"]))
      #expect(lines.count == 3)
    }
  }

  /// A parking queue an older build declared as a classic queue: the service's consumer still
  /// connects and parks in it, and `grocer parking migrate` makes it a quorum queue with the
  /// message it held (headers and all), without a dead letter lost meanwhile.
  @Test func parkingMigrateReplacesAClassicParkingQueueKeepingItsMessages() async throws {
    let queue = uniqueName("ops-migrate")
    let parking = "\(queue).parking"
    let key = "\(queue).happened"
    let definitions = FileManager.default.temporaryDirectory.appendingPathComponent("\(queue).json")
    try await withCleanup({
      await cleanUp([queue, parking, "\(parking).migrating"])
      try? FileManager.default.removeItem(at: definitions)
    }) {
      let old: [String: Any] = [
        "exchanges": [
          [
            "name": EventTopology.deadLetterExchange, "vhost": "/", "type": "headers", "durable": true,
            "auto_delete": false, "internal": false, "arguments": [:],
          ]
        ],
        "queues": [["name": parking, "vhost": "/", "durable": true, "auto_delete": false, "arguments": [:]]],
        "bindings": [
          [
            "source": EventTopology.deadLetterExchange, "vhost": "/", "destination": parking,
            "destination_type": "queue", "routing_key": "",
            "arguments": ["x-match": "all-with-x", "x-first-death-queue": queue],
          ]
        ],
      ]
      try JSONSerialization.data(withJSONObject: old).write(to: definitions)
      try await TestBroker.ctl(["import_definitions", definitions.path])
      let environment = OpsEnvironment(settings: Settings(["GROCER_RABBITMQ_SCRIPT": TestBroker.script]))
      let imported = try await eventually {
        try await QueuesCommand.list(environment, filter: queue).contains {
          $0.name == parking && $0.type == "classic"
        }
      }
      try #require(imported)

      try await parkPoisonMessage(queue: queue, key: key, id: "poison-old")

      let (status, output) = await runGrocer(["parking", "migrate"])
      #expect(status == 0, "\(output.err)")
      #expect(output.out.contains("\(parking): now a quorum queue, 1 message(s) kept"), "\(output.out)")
      let after = try await QueuesCommand.list(environment, filter: queue)
      #expect(after.map(\.name).sorted() == [queue, parking], "\(after)")
      #expect(after.first { $0.name == parking }?.type == "quorum")
      #expect(try await AMQPAdmin.messageCount(configuration: configuration, queue: parking) == 1)
      let (_, shown) = await runGrocer(["dead-letters", queue])
      #expect(shown.out.contains("message id   poison-old"), "\(shown.out)")
      #expect(shown.out.contains("rejected in \(queue)"), "\(shown.out)")

      // The new queue parks what dies from now on, and migrating again finds nothing to do.
      try await parkPoisonMessage(queue: queue, key: key, id: "poison-new", expecting: 2)
      let (again, second) = await runGrocer(["parking", "migrate"])
      #expect(again == 0, "\(second.err)")
      #expect(!second.out.contains(parking), "\(second.out)")
    }
  }
}
