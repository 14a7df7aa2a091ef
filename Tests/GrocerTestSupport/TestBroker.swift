import Foundation
import GrocerAMQP
import GrocerCore
import GrocerRuntime
import Synchronization
import Testing

/// The local broker the tests run against: found on 127.0.0.1:5672 or started with
/// `deploy/local/rabbitmq.sh start` (which returns at once when a node already answers).
/// Tests never stop it: other checkouts share it.
public enum TestBroker {
  public static let repositoryRoot = URL(fileURLWithPath: #filePath)
    .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
  public static let script = repositoryRoot.appendingPathComponent("deploy/local/rabbitmq.sh").path

  /// Fast reconnects so the reconnect test does not wait long.
  public static func configuration(_ name: String = "grocer-amqp-tests") -> AMQPConfiguration {
    AMQPConfiguration(
      reconnectBackoff: ReconnectBackoff(minimum: .milliseconds(50), maximum: .milliseconds(500)),
      connectionName: name, publishTimeout: .seconds(10))
  }

  private static let started: Result<Void, BrokerUnavailable> = {
    do {
      let (status, output) = try run(["start"])
      return status == 0 ? .success(()) : .failure(BrokerUnavailable(output: output))
    } catch {
      return .failure(BrokerUnavailable(output: "\(error)"))
    }
  }()

  public struct BrokerUnavailable: Error, CustomStringConvertible {
    public var output: String
    public var description: String { "RabbitMQ is not reachable and could not be started: \(output)" }
  }

  /// Makes sure the broker runs; throws (failing the test) if it cannot.
  public static func ensureRunning() throws {
    try started.get()
  }

  /// Runs `rabbitmqctl` against the node with the script's environment.
  /// Runs on its own thread: `rabbitmqctl` takes a second or two, and blocking the two threads
  /// of Swift's cooperative pool with it would stall every other test.
  @discardableResult
  public static func ctl(_ arguments: [String]) async throws -> String {
    let (status, output) = try await withCheckedThrowingContinuation {
      (continuation: CheckedContinuation<(Int32, String), any Error>) in
      Thread { continuation.resume(with: Result { try run(["ctl"] + arguments) }) }.start()
    }
    guard status == 0 else { throw BrokerUnavailable(output: output) }
    return output
  }

  /// Sets the dead-letter policy (`deploy/local/rabbitmq.sh policy`) on `vhost`.
  public static func setPolicy(vhost: String) async throws {
    try await script(["policy", vhost])
  }

  /// Stops the whole node (`deploy/local/rabbitmq.sh stop`): for the fault suite, which must
  /// start it again (`startNode`).
  public static func stopNode() async throws {
    try await script(["stop"])
  }

  /// Starts the node (`deploy/local/rabbitmq.sh start`), returning once it answers.
  public static func startNode() async throws {
    try await script(["start"])
  }

  /// Upgrades what builds before the dead-letter policy declared in `vhost`
  /// (`deploy/local/rabbitmq.sh migrate`); returns what the script said.
  @discardableResult
  public static func migrate(vhost: String) async throws -> String {
    try await script(["migrate", vhost])
  }

  /// Runs the script on a thread of its own; returns its output, throws it if the script fails.
  @discardableResult
  private static func script(_ arguments: [String]) async throws -> String {
    let (status, output) = try await withCheckedThrowingContinuation {
      (continuation: CheckedContinuation<(Int32, String), any Error>) in
      Thread { continuation.resume(with: Result { try run(arguments) }) }.start()
    }
    guard status == 0 else { throw BrokerUnavailable(output: output) }
    return output
  }

  /// A `rabbitmqctl list_…` table (without headers) as rows of tab-separated columns.
  public static func table(_ arguments: [String]) async throws -> [[String]] {
    let output = try await ctl(arguments + ["--quiet", "--no-table-headers"])
    return output.split(separator: "\n").map {
      $0.split(separator: "\t", omittingEmptySubsequences: false).map(String.init)
    }
  }

  /// Force-closes every broker connection whose client-provided name is `name`; returns how many.
  public static func closeConnections(named name: String) async throws -> Int {
    // RabbitMQ 3.10 has no user_provided_name column: look for the name in client_properties.
    let listing = try await ctl([
      "list_connections", "pid", "client_properties", "--quiet", "--no-table-headers",
    ])
    var closed = 0
    for line in listing.split(separator: "\n") where line.contains("\"\(name)\"") {
      guard let pid = line.split(separator: "\t").first else { continue }
      try await ctl(["close_connection", String(pid), "closed by test"])
      closed += 1
    }
    return closed
  }

  /// Runs the script to its end (`Subprocess`: its output in a temporary file, no
  /// `Foundation.Process`, which sometimes missed the exit of the script that starts the broker).
  private static func run(_ arguments: [String]) throws -> (Int32, String) {
    do {
      let outcome = try Subprocess.runBlocking(["/bin/bash", script] + arguments)
      return (outcome.status, outcome.output)
    } catch {
      throw BrokerUnavailable(output: "\(error)")
    }
  }
}

/// A unique name per test, so tests can run side by side on the shared broker.
public func uniqueName(_ prefix: String) -> String {
  "test.\(prefix).\(UUID().uuidString.prefix(8).lowercased())"
}

/// Polls `condition` until it holds or `timeout` passes.
public func eventually(timeout: Duration = .seconds(10), _ condition: @Sendable () async throws -> Bool)
  async rethrows
  -> Bool
{
  let deadline = ContinuousClock.now + timeout
  while ContinuousClock.now < deadline {
    if try await condition() { return true }
    try? await Task.sleep(for: .milliseconds(20))
  }
  return try await condition()
}

/// A thread-safe list that handlers append to.
public final class Recorder<Element: Sendable>: Sendable {
  private let items = Mutex<[Element]>([])
  public init() {}
  public func append(_ item: Element) { items.withLock { $0.append(item) } }
  public var all: [Element] { items.withLock { $0 } }
  public var count: Int { items.withLock { $0.count } }
}

public func message(_ routingKey: String, _ index: Int, size: Int = 0) -> OutgoingMessage {
  var body = Data("{\"n\":\(index)}".utf8)
  if size > body.count { body.append(Data(repeating: UInt8(ascii: " "), count: size - body.count)) }
  return OutgoingMessage(
    messageID: "m-\(index)", routingKey: routingKey, type: routingKey, body: body,
    timestamp: Date(timeIntervalSince1970: 1_700_000_000 + Double(index)), correlationID: "c-\(index)")
}

/// Runs `body`, then awaits `cleanup`, whether `body` threw or not.
///
/// For stopping services and deleting their queues: a `defer { Task { … } }` may never run
/// before the test process exits, and queues left behind collect every event they are bound to.
public func withCleanup<T>(
  _ cleanup: () async -> Void, _ body: () async throws -> T
) async throws -> T {
  let result: T
  do {
    result = try await body()
  } catch {
    await cleanup()
    throw error
  }
  await cleanup()
  return result
}
