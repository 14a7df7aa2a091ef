import Foundation
import GrocerAMQP
import GrocerRabbitMQ
import GrocerRuntime
import GrocerTestSupport
import Testing

/// Several broker addresses (`AMQPConfiguration.urls`, a cluster's nodes): a connection goes to
/// the first that answers and, when it is lost, to the next one. Two proxies in front of the
/// local node stand for two nodes; stopping one drops its connections as a dying node would.
@Suite struct FailoverTests {
  init() throws { try TestBroker.ensureRunning() }

  func configuration(_ name: String, _ ports: [Int]) -> AMQPConfiguration {
    var configuration = TestBroker.configuration(name)
    configuration.urls = ports.map { "amqp://guest:guest@127.0.0.1:\($0)/" }
    return configuration
  }

  @Test func aConnectionSkipsANodeThatDoesNotAnswerAndComesBackOnTheNextNode() async throws {
    let first = try FreezableProxy()
    let second = try FreezableProxy()
    defer { Task { await second.stop() } }
    let queue = uniqueName("failover")
    let received = Recorder<String>()
    // Port 1 answers nobody: the consumer takes the next address.
    let consumer = AMQPConsumer(
      configuration: configuration("grocer-failover-consumer", [1, first.port, second.port]),
      queue: QueueSpec(name: queue, bindingKeys: [queue]), logger: .discarding(), metrics: MetricsRegistry(),
      handler: { delivery in
        received.append(delivery.messageID ?? "")
        return .ack
      })
    try await consumer.start()
    let metrics = MetricsRegistry()
    let publisher = AMQPPublisher(
      configuration: configuration("grocer-failover-publisher", [first.port, second.port]),
      logger: .discarding(), metrics: metrics)
    try await publisher.start()
    #expect(consumer.connectedNode == "127.0.0.1:\(first.port)")
    #expect(publisher.connectedNode == "127.0.0.1:\(first.port)")
    try await publisher.publish([message(queue, 1)])
    #expect(await eventually { received.all == ["m-1"] })

    // A connection the broker closed comes back on the next node, though its own still answers.
    #expect(
      try await eventually { try await TestBroker.closeConnections(named: "grocer-failover-publisher") == 1 })
    #expect(await eventually { publisher.connectedNode == "127.0.0.1:\(second.port)" })
    #expect(publisher.failovers == 1)
    #expect(consumer.failovers == 0)
    let rendered = metrics.render()
    #expect(rendered.contains(#"amqp_reconnects_total{connection="grocer-failover-publisher"} 1"#))
    #expect(rendered.contains(#"amqp_failovers_total{connection="grocer-failover-publisher"} 1"#))
    // A node that goes: its connections move to the next one that answers.
    await first.stop()
    #expect(await eventually { consumer.connectedNode == "127.0.0.1:\(second.port)" })
    #expect(consumer.failovers == 1)
    #expect(publisher.failovers == 1)
    #expect(await publisher.waitUntilConnected(timeout: .seconds(10)))
    try await publisher.publish([message(queue, 2)])
    #expect(await eventually { received.all == ["m-1", "m-2"] })

    await consumer.shutdown()
    await publisher.shutdown()
    try await AMQPAdmin.deleteQueues(configuration: TestBroker.configuration(), [queue, "\(queue).parking"])
  }
}
