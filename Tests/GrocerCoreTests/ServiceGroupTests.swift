import Foundation
import GrocerRuntime
import Synchronization
import Testing

@testable import GrocerCore

@Suite struct ServiceGroupTests {
  /// What the services did, in order.
  final class Journal: Sendable {
    private let entries = Mutex<[String]>([])
    func record(_ entry: String) { entries.withLock { $0.append(entry) } }
    var all: [String] { entries.withLock { $0 } }
  }

  struct StartFailure: Error, Equatable {}

  final class FakeService: LifecycleService {
    let name: String
    private let journal: Journal
    private let failsToStart: Bool
    private let onStarted: @Sendable () -> Void

    init(
      _ name: String, journal: Journal, failsToStart: Bool = false,
      onStarted: @escaping @Sendable () -> Void = {}
    ) {
      self.name = name
      self.journal = journal
      self.failsToStart = failsToStart
      self.onStarted = onStarted
    }

    func start() async throws {
      journal.record("start \(name)")
      if failsToStart { throw StartFailure() }
      onStarted()
    }

    func shutdown() async { journal.record("stop \(name)") }
  }

  @Test func startsInOrderAndStopsInReverseWhenAskedToStop() async throws {
    let journal = Journal()
    let (started, allStarted) = AsyncStream<Void>.makeStream()
    let group = ServiceGroup(
      services: [
        FakeService("database", journal: journal), FakeService("broker", journal: journal),
        FakeService("http", journal: journal, onStarted: { allStarted.yield() }),
      ],
      logger: .discarding())
    let running = Task { try await group.run(handlingSignals: false) }
    for await _ in started { break }
    #expect(journal.all == ["start database", "start broker", "start http"])
    group.stop()
    try await running.value
    #expect(
      journal.all == [
        "start database", "start broker", "start http", "stop http", "stop broker", "stop database",
      ])
  }

  @Test func aStopRequestedBeforeRunningStopsRightAfterStarting() async throws {
    let journal = Journal()
    let group = ServiceGroup(
      services: [FakeService("a", journal: journal), FakeService("b", journal: journal)],
      logger: .discarding())
    group.stop()
    try await group.run(handlingSignals: false)
    #expect(journal.all == ["start a", "start b", "stop b", "stop a"])
  }

  @Test func aFailingStartShutsDownTheStartedOnesAndRethrows() async throws {
    let journal = Journal()
    let sink = LogSink.memory()
    let group = ServiceGroup(
      services: [
        FakeService("database", journal: journal), FakeService("broker", journal: journal),
        FakeService("consumer", journal: journal, failsToStart: true), FakeService("http", journal: journal),
      ],
      logger: Logger(label: "test", sink: sink))
    await #expect(throws: StartFailure()) { try await group.run(handlingSignals: false) }
    #expect(
      journal.all == ["start database", "start broker", "start consumer", "stop broker", "stop database"])
    #expect(
      sink.lines.contains { $0.contains("\"level\":\"error\"") && $0.contains("service failed to start") })
  }
}

@Suite struct RunBlockingTests {
  @Test func blockingWorkDoesNotHoldTheCooperativePool() async throws {
    // More blocked calls than the pool has threads: they would starve it if they ran on it.
    let results = try await withThrowingTaskGroup(of: Int.self) { group in
      for index in 0..<8 {
        group.addTask {
          try await runBlocking {
            usleep(200_000)
            return index
          }
        }
      }
      return try await group.reduce(into: []) { $0.append($1) }
    }
    #expect(results.sorted() == Array(0..<8))
  }

  @Test func anErrorComesBack() async {
    struct Failed: Error {}
    await #expect(throws: Failed.self) { try await runBlocking { throw Failed() } }
  }
}
