import Foundation
import GrocerAMQP
import GrocerCore
import GrocerRabbitMQ
import GrocerRuntime
import GrocerTestSupport
import Synchronization
import Testing

/// A real three-node cluster (`TestCluster`): quorum queues (a service queue and its parking
/// queue) and the connections' failover keep events flowing while each node in turn is killed
/// with SIGKILL and started again.
@Suite(.serialized) struct ClusterTests {
  static let logger = Logger(label: "cluster-test", level: .warning)
  /// Publishes message after message as the outbox relay does (each retried until the broker
  /// confirms it) until stopped; remembers the confirmed ones.
  final class Relay: Sendable {
    let confirmed = Recorder<String>()
    private let stopped = Atomic<Bool>(false)
    private let publisher: AMQPPublisher
    private let routingKey: String

    init(publisher: AMQPPublisher, routingKey: String) {
      self.publisher = publisher
      self.routingKey = routingKey
    }

    func run() async {
      var index = 0
      while !stopped.load(ordering: .relaxed) {
        index += 1
        let outgoing = message(routingKey, index)
        while !stopped.load(ordering: .relaxed) {
          do {
            try await publisher.publish([outgoing])
            confirmed.append(outgoing.messageID)
            break
          } catch {
            try? await Task.sleep(for: .milliseconds(50))
          }
        }
        try? await Task.sleep(for: .milliseconds(20))
      }
    }

    func stop() { stopped.store(true, ordering: .relaxed) }
  }

  @Test func aConsumerAndARelayKeepWorkingWhileEachNodeInTurnIsKilled() async throws {
    try await TestCluster.start()
    let queue = uniqueName("cluster")
    let received = Recorder<String>()
    let consumer = AMQPConsumer(
      configuration: TestCluster.configuration("grocer-cluster-consumer"),
      queue: QueueSpec(name: queue, bindingKeys: [queue], kind: .durableQuorum(expiresAfter: .seconds(600))),
      logger: Self.logger, metrics: MetricsRegistry(),
      handler: { delivery in
        received.append(delivery.messageID ?? "")
        return .ack
      })
    let publisher = AMQPPublisher(
      configuration: TestCluster.configuration("grocer-cluster-relay"), logger: Self.logger,
      metrics: MetricsRegistry())
    try await withCleanup({
      await consumer.shutdown()
      await publisher.shutdown()
      try? await AMQPAdmin.deleteQueues(
        configuration: TestCluster.configuration("grocer-cluster-cleanup"), [queue, "\(queue).parking"])
      try? await TestCluster.stop()
    }) {
      try await consumer.start()
      try await publisher.start()
      // The nodes are tried in order: both start on node 1, which goes first.
      #expect(consumer.connectedNode == TestCluster.address(ofNode: 1))
      #expect(publisher.connectedNode == TestCluster.address(ofNode: 1))
      let relay = Relay(publisher: publisher, routingKey: queue)
      let relaying = Task { await relay.run() }
      #expect(await eventually(timeout: .seconds(10)) { received.count >= 20 })

      for node in 1...3 {
        let before = Set(received.all)
        let clock = ContinuousClock.now
        try await TestCluster.kill(node: node)
        // Events published after the kill arrive: the queue and its parking queue still have a
        // majority, and both connections moved to a node that is up.
        let flowing = await eventually(timeout: .seconds(30)) {
          Set(received.all).subtracting(before).count >= 20
            && consumer.connectedNode != TestCluster.address(ofNode: node)
            && publisher.connectedNode != TestCluster.address(ofNode: node)
        }
        #expect(
          flowing,
          "events stopped after node \(node) was killed: \(Set(received.all).subtracting(before).count) new, consumer on \(consumer.connectedNode ?? "none"), relay on \(publisher.connectedNode ?? "none"), \(relay.confirmed.count) confirmed"
        )
        print("cluster: node \(node) killed, events flowing again after \(ContinuousClock.now - clock)")
        try await TestCluster.start(node: node)
      }
      relay.stop()
      await relaying.value
      let confirmed = Set(relay.confirmed.all)
      let everyConfirmedArrived = await eventually(timeout: .seconds(30)) {
        confirmed.isSubset(of: Set(received.all))
      }
      #expect(everyConfirmedArrived, "lost: \(confirmed.subtracting(Set(received.all)).sorted())")
      #expect(confirmed.count > 60)
      // Each kill took the node both were on.
      #expect(consumer.failovers == 3)
      #expect(publisher.failovers == 3)
    }
  }
}
