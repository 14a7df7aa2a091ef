import Foundation
import GrocerCore
import GrocerTestSupport
import Synchronization

/// Injects the plan's faults at random moments of the load, one at a time: every service killed
/// with SIGKILL `killsPerService` times (in a shuffled order each round) and started again on its
/// port and data directory, RabbitMQ's application stopped and started (on the cluster: one node
/// killed with SIGKILL and started again), and the disk under one service's data directory
/// filled for a while.
///
/// Disk full: the service's data directory is a tmpfs of its own (mounted by `LocalSystem`), and
/// a file fills it until the kernel answers ENOSPC; SQLite then fails with SQLITE_FULL whenever a
/// write needs a new page (WAL growth, the checkpoint growing the database). `chmod` does not stop
/// root, and `chattr +i` only stops new opens, not the service's open descriptors.
final class FaultInjector: Sendable {
  /// One injected fault, as the report shows it.
  struct Fault: Sendable, Codable {
    var kind: String
    var target: String
    /// Seconds since the load started.
    var at: Double
    var seconds: Double
    var note: String?
  }

  struct Step: Sendable {
    var kind: String
    var target: String
    var at: Double
  }

  let system: LocalSystem
  let plan: FaultPlan
  let faults = Mutex<[Fault]>([])
  /// Whether the broker's application is stopped by us (the test's clean-up starts it again).
  let brokerStopped = Atomic<Bool>(false)

  init(system: LocalSystem, plan: FaultPlan) {
    self.system = system
    self.plan = plan
  }

  /// The schedule: faults spread over the middle of the load, each slot jittered.
  func schedule() -> [Step] {
    var random = SplitMix64(seed: plan.seed)
    var kinds: [(String, String)] = []
    for _ in 0..<plan.killsPerService {
      kinds += system.processNames.shuffled(using: &random).map { ("kill -9", $0) }
    }
    if plan.cluster {
      // Every node in turn, in a shuffled order.
      let nodes = (1...3).shuffled(using: &random)
      for index in 0..<plan.brokerRestarts { kinds.append(("node kill", "rabbitmq-\(nodes[index % 3])")) }
    } else {
      for _ in 0..<plan.brokerRestarts { kinds.append(("broker restart", "rabbitmq")) }
    }
    for _ in 0..<plan.diskFullEpisodes { kinds.append(("disk full", plan.diskFullService)) }
    for _ in 0..<plan.databaseRestarts { kinds.append(("db restart", "postgresql")) }
    // Broker restarts and disk-full episodes mixed in among the kills, not all at the end.
    kinds.shuffle(using: &random)
    let start = plan.seconds * 0.08
    let span = plan.seconds * 0.8
    let slot = kinds.isEmpty ? 0 : span / Double(kinds.count)
    return kinds.enumerated().map { index, kind in
      let jitter = Double(random.next() % 1000) / 1000 * slot * 0.5
      return Step(kind: kind.0, target: kind.1, at: start + Double(index) * slot + jitter)
    }
  }

  func run(startedAt: ContinuousClock.Instant) async throws {
    var random = SplitMix64(seed: plan.seed ^ 0xFA17)
    for step in schedule() {
      let due = startedAt + .milliseconds(Int(step.at * 1000))
      if due > .now { try await Task.sleep(until: due) }
      let began = ContinuousClock.now
      var note: String?
      switch step.kind {
      case "kill -9":
        try await system.kill9(step.target)
        try await Task.sleep(for: .milliseconds(300 + Int(random.next() % 1700)))
        try await system.restart(step.target)
      case "broker restart":
        brokerStopped.store(true, ordering: .sequentiallyConsistent)
        do {
          if plan.restartsWholeNode {
            try await TestBroker.stopNode()
            note = "whole node"
          } else {
            try await TestBroker.ctl(["stop_app"])
          }
          try await Task.sleep(for: .seconds(3))
        } catch {
          note = "stopping: \(error)"
        }
        try await startBroker()
      case "node kill":
        let node = Int(step.target.dropFirst("rabbitmq-".count))!
        brokerStopped.store(true, ordering: .sequentiallyConsistent)
        try await TestCluster.kill(node: node)
        try await Task.sleep(for: .seconds(3))
        try await TestCluster.start(node: node)
        brokerStopped.store(false, ordering: .sequentiallyConsistent)
      case "db restart":
        try await TestPostgres.restart(after: .seconds(3))
      case "disk full":
        let log = system.logPath(step.target)
        let before = Self.fileSize(log)
        let filled = try system.fillDisk(step.target)
        try await Task.sleep(for: .milliseconds(Int(plan.diskFullSeconds * 1000)))
        system.freeDisk(step.target)
        // Give the service a moment to log what failed, then count the disk-full errors it saw.
        try await Task.sleep(for: .milliseconds(500))
        let errors = Self.lines(of: log, from: before).filter {
          $0.localizedCaseInsensitiveContains("full") || $0.contains("SQLITE_FULL") || $0.contains("(13)")
        }
        note = "filled \(filled / 1024) KiB; \(errors.count) disk-full errors logged"
      default:
        break
      }
      let fault = Fault(
        kind: step.kind, target: step.target, at: (began - startedAt).seconds,
        seconds: (ContinuousClock.now - began).seconds, note: note)
      faults.withLock { $0.append(fault) }
    }
  }

  /// `start_app` (or the whole node; on the cluster, every node that is down), retried: the
  /// node is shared, it must come back whatever happened.
  func startBroker() async throws {
    guard brokerStopped.load(ordering: .sequentiallyConsistent) else { return }
    var lastError: (any Error)?
    for _ in 0..<10 {
      do {
        if plan.cluster {
          try await TestCluster.start()
          brokerStopped.store(false, ordering: .sequentiallyConsistent)
          return
        } else if plan.restartsWholeNode {
          try await TestBroker.startNode()
        } else {
          try await TestBroker.ctl(["start_app"])
        }
        try await TestBroker.ctl(["await_startup"])
        brokerStopped.store(false, ordering: .sequentiallyConsistent)
        return
      } catch {
        lastError = error
        try? await Task.sleep(for: .seconds(1))
      }
    }
    throw lastError!
  }

  static func fileSize(_ path: String) -> UInt64 {
    ((try? FileManager.default.attributesOfItem(atPath: path))?[.size] as? NSNumber)?.uint64Value ?? 0
  }

  static func lines(of path: String, from offset: UInt64) -> [String] {
    guard let handle = FileHandle(forReadingAtPath: path) else { return [] }
    defer { try? handle.close() }
    try? handle.seek(toOffset: offset)
    let data = (try? handle.readToEnd()) ?? Data()
    return String(decoding: data, as: UTF8.self).split(separator: "\n").map(String.init)
  }
}

extension Duration {
  var seconds: Double { Double(components.seconds) + Double(components.attoseconds) / 1e18 }
}
