import Foundation
import GrocerAMQP
import GrocerRuntime
import Testing

/// A three-node RabbitMQ cluster of the tests' own (`deploy/local/rabbitmq.sh cluster`, named
/// `grocer-test-N@localhost` on AMQP ports 5682-5684), beside the single node the other tests
/// share. Node N is 1, 2 or 3.
public enum TestCluster {
  public static let name = "grocer-test"
  public static let firstPort = 5682

  static let environment: [String: String] = ProcessInfo.processInfo.environment.merging([
    "GROCER_RABBITMQ_CLUSTER_NAME": name, "GROCER_RABBITMQ_CLUSTER_PORT": String(firstPort),
    "GROCER_BROKER": "cluster",
  ]) { $1 }

  /// Each node's address, in node order.
  public static let urls = (0..<3).map { "amqp://guest:guest@127.0.0.1:\(firstPort + $0)/" }

  /// Each node's address with `vhost` (nil: `/`), as `GROCER_AMQP_URLS` lists them.
  public static func urls(vhost: String?) -> [String] { urls.map { $0 + (vhost ?? "") } }

  /// `TestBroker.configuration` pointed at every node, waiting after a lost connection as the
  /// services do on a cluster.
  public static func configuration(_ connectionName: String, vhost: String? = nil) -> AMQPConfiguration {
    var configuration = TestBroker.configuration(connectionName)
    configuration.urls = urls(vhost: vhost)
    configuration.reconnectBackoff.afterLoss = .milliseconds(
      AMQPConfiguration.defaultFailoverDelayMilliseconds)
    return configuration
  }

  /// Node N's `host:port`, as a connection's `connectedNode` names it.
  public static func address(ofNode node: Int) -> String { "127.0.0.1:\(firstPort + node - 1)" }

  /// Starts the three nodes and joins them (returns at once if they run).
  public static func start() async throws { try await cluster(["start"]) }

  /// Stops every node.
  public static func stop() async throws { try await cluster(["stop"]) }

  /// Starts whichever node is down (one a test killed and did not bring back); quick when all run.
  public static func revive() async throws {
    for node in 1...3 { try await start(node: node) }
  }

  /// The cluster for a suite: started before its first test and stopped after its last, where
  /// each test starting and stopping it cost half a minute on 2 cores. Tests bring back the
  /// nodes they kill (`revive`).
  public struct Running: SuiteTrait, TestScoping {
    public init() {}

    public func provideScope(
      for test: Test, testCase: Test.Case?, performing function: @Sendable () async throws -> Void
    ) async throws {
      try await TestCluster.start()
      do {
        try await function()
      } catch {
        try? await TestCluster.stop()
        throw error
      }
      try await TestCluster.stop()
    }
  }

  /// SIGKILL of node N's Erlang VM.
  public static func kill(node: Int) async throws { try await cluster(["kill", String(node)]) }

  /// Starts node N again (it rejoins the cluster), returning once it answers.
  public static func start(node: Int) async throws { try await cluster(["start-node", String(node)]) }

  /// `rabbitmqctl` against node N.
  @discardableResult
  public static func ctl(node: Int, _ arguments: [String]) async throws -> String {
    try await cluster(["ctl", String(node)] + arguments)
  }

  /// Sets the dead-letter policy on `vhost` (through node 1).
  public static func setPolicy(vhost: String) async throws { try await script(["policy", vhost]) }

  /// A `rabbitmqctl list_…` table (without headers), asked of node 1.
  public static func table(_ arguments: [String]) async throws -> [[String]] {
    let output = try await ctl(node: 1, arguments + ["--quiet", "--no-table-headers"])
    return output.split(separator: "\n").map {
      $0.split(separator: "\t", omittingEmptySubsequences: false).map(String.init)
    }
  }

  @discardableResult
  private static func cluster(_ arguments: [String]) async throws -> String {
    try await script(["cluster"] + arguments)
  }

  /// Runs `rabbitmq.sh` with the cluster's names and ports, on a thread of its own.
  private static func script(_ arguments: [String]) async throws -> String {
    let outcome = try await withCheckedThrowingContinuation {
      (continuation: CheckedContinuation<Subprocess.Outcome, any Error>) in
      Thread {
        continuation.resume(
          with: Result {
            try Subprocess.runBlocking(
              ["/bin/bash", TestBroker.script] + arguments, environment: environment)
          })
      }.start()
    }
    guard outcome.status == 0 else {
      throw TestBroker.BrokerUnavailable(
        output: "rabbitmq.sh \(arguments.joined(separator: " ")): \(outcome.output)")
    }
    return outcome.output
  }
}
