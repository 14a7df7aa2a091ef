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
/// with SIGKILL and started again. The suite starts the cluster once and stops it at its end
/// (30 s of the two on 2 cores); each test brings back every node it killed.
@Suite(.serialized, TestCluster.Running()) struct ClusterTests {
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
    let queue = uniqueName("cluster")
    let received = Recorder<String>()
    let consumer = AMQPConsumer(
      configuration: TestCluster.configuration("grocer-cluster-consumer"),
      queue: QueueSpec(name: queue, bindingKeys: [queue], kind: .durableQuorum(expiresAfter: .seconds(600))),
      logger: Self.logger, metrics: MetricsRegistry(),
      handler: { delivery in
        if delivery.messageID == "poison" { return .reject }
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
      try? await TestCluster.revive()
    }) {
      try await consumer.start()
      try await publisher.start()
      // The nodes are tried in order: both start on node 1, which goes first.
      #expect(consumer.connectedNode == TestCluster.address(ofNode: 1))
      #expect(publisher.connectedNode == TestCluster.address(ofNode: 1))
      // The queue and its parking queue have a member on every node (RabbitMQ's default group
      // size covers three), so each keeps a majority when one node dies.
      let members = try await TestCluster.table(["list_queues", "name", "members"])
      for name in [queue, "\(queue).parking"] {
        let row = members.first { $0.first == name }
        #expect(
          (1...3).allSatisfy { row?.last?.contains("grocer-test-\($0)@localhost") == true },
          "\(name): \(row ?? [])")
      }
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
      // The cluster's dead-letter policy parks a poison message as one node does.
      var poison = message(queue, 0)
      poison.messageID = "poison"
      try await publisher.publish([poison])
      let parked = try await eventually(timeout: .seconds(10)) {
        try await AMQPAdmin.messageCount(
          configuration: TestCluster.configuration("grocer-cluster-parking"), queue: "\(queue).parking") == 1
      }
      #expect(parked)
    }
  }

  /// Request/reply through the cluster: killing the node of the client (its replies come over
  /// its own channel) or of the server (whose plain queue goes with it) loses the questions in
  /// flight, and each is answered when asked again once the client has reconnected.
  @Test func aQuestionInFlightThroughANodeThatDiesIsAnsweredWhenAskedAgain() async throws {
    let queue = uniqueName("cluster-rpc")
    let server = AMQPRPCServer(
      configuration: TestCluster.configuration("grocer-cluster-rpc-server"), queue: queue, concurrency: 8,
      logger: Self.logger
    ) { delivery in
      try? await Task.sleep(for: .milliseconds(300))
      return delivery.body
    }
    let client = AMQPRPCClient(
      configuration: TestCluster.configuration("grocer-cluster-rpc-client"), logger: Self.logger)
    /// Asks until answered or 30 s have passed (as the checkout does: again once reconnected,
    /// 250 ms after a failure, so a question refused at once while the loss is being noticed
    /// does not use up its tries); returns the answer and how many times it asked.
    @Sendable func ask(_ question: String) async -> (String, Int) {
      let deadline = ContinuousClock.now + .seconds(30)
      var attempt = 0
      while ContinuousClock.now < deadline {
        attempt += 1
        _ = await client.waitUntilConnected(timeout: .seconds(10))
        if let answer = try? await client.request(
          routingKey: queue, body: Data(question.utf8), timeout: .seconds(3))
        {
          return (String(decoding: answer, as: UTF8.self), attempt)
        }
        try? await Task.sleep(for: .milliseconds(250))
      }
      return ("", attempt)
    }
    try await withCleanup({
      await client.shutdown()
      await server.shutdown()
      try? await TestCluster.revive()
    }) {
      try await server.start()
      try await client.start()
      #expect(server.connectedNode == TestCluster.address(ofNode: 1))
      #expect(client.connectedNode == TestCluster.address(ofNode: 1))
      for node in 1...3 {
        // Node 1 holds the client, the server and its queue; then each moves on to the next.
        let questions = (1...8).map { "node \(node) question \($0)" }
        let asking = Task {
          await withTaskGroup(of: (String, String, Int).self) { group in
            for question in questions {
              group.addTask {
                let (answer, attempts) = await ask(question)
                return (question, answer, attempts)
              }
            }
            return await group.reduce(into: []) { $0.append($1) }
          }
        }
        try await Task.sleep(for: .milliseconds(100))
        try await TestCluster.kill(node: node)
        let answered = await asking.value
        #expect(answered.allSatisfy { $0.0 == $0.1 }, "\(answered.filter { $0.0 != $0.1 })")
        #expect(answered.contains { $0.2 > 1 }, "no question was in flight when node \(node) died")
        try await TestCluster.start(node: node)
      }
    }
  }

  /// A request queue lives on one node; RabbitMQ does not tell a server consuming it from
  /// another node that it died with its node. The server notices by asking (every 2 s), declares
  /// it again on its own node, and questions are answered again.
  @Test func aServerWhoseQueueDiedWithAnotherNodeDeclaresItAgain() async throws {
    let queue = uniqueName("cluster-gone")
    func configuration(_ name: String, startingAt node: Int) -> AMQPConfiguration {
      var configuration = TestCluster.configuration(name)
      configuration.urls = Array(configuration.urls[(node - 1)...] + configuration.urls[..<(node - 1)])
      return configuration
    }
    func server(_ name: String, on node: Int) -> AMQPRPCServer {
      AMQPRPCServer(
        configuration: configuration(name, startingAt: node), queue: queue, logger: Self.logger
      ) { $0.body }
    }
    // The first server declares the queue on node 1, the second consumes it from node 2.
    let first = server("grocer-cluster-gone-1", on: 1)
    let second = server("grocer-cluster-gone-2", on: 2)
    let client = AMQPRPCClient(
      configuration: configuration("grocer-cluster-gone-client", startingAt: 3), logger: Self.logger)
    try await withCleanup({
      await second.shutdown()
      await client.shutdown()
      try? await TestCluster.revive()
    }) {
      try await first.start()
      try await second.start()
      try await client.start()
      #expect(second.connectedNode == TestCluster.address(ofNode: 2))
      await first.shutdown()
      let before = try await client.request(routingKey: queue, body: Data("one".utf8), timeout: .seconds(3))
      #expect(String(decoding: before, as: UTF8.self) == "one")
      try await TestCluster.kill(node: 1)
      // Asked until answered: the queue is gone until the second server declares it again.
      let answered = await eventually(timeout: .seconds(15)) {
        (try? await client.request(routingKey: queue, body: Data("two".utf8), timeout: .seconds(1)))
          == Data("two".utf8)
      }
      #expect(answered, "the server never noticed that its queue died with node 1")
    }
  }
}
