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
  struct LoopFailure: Error, Equatable {}

  /// A part driven like the real ones: `start`, a loop whose end `finished` reports, `shutdown`.
  final class FakePart: LifecycleService {
    let name: String
    private let journal: Journal
    private let failsToStart: Bool
    private let drain: Duration
    private let onStarted: @Sendable () -> Void
    private let loopEnded = Completion()

    init(
      _ name: String, journal: Journal, failsToStart: Bool = false, drain: Duration = .zero,
      onStarted: @escaping @Sendable () -> Void = {}
    ) {
      self.name = name
      self.journal = journal
      self.failsToStart = failsToStart
      self.drain = drain
      self.onStarted = onStarted
    }

    func start() async throws {
      journal.record("start \(name)")
      if failsToStart { throw StartFailure() }
      onStarted()
    }

    func shutdown() async {
      journal.record("stop \(name)")
      if drain > .zero { try? await Task.sleep(for: drain) }
      journal.record("stopped \(name)")
      loopEnded.finish()
    }

    func finished() async throws { try await loopEnded.wait() }

    /// Ends the part's loop as a crash would: with `error`, or returning.
    func die(throwing error: (any Error)? = nil) { loopEnded.finish(throwing: error) }
  }

  /// A plain service whose `run()` is given by the test.
  struct PlainService: Service {
    let name: String
    let body: @Sendable () async throws -> Void
    func run() async throws { try await body() }
  }

  /// Runs `group` in a task and returns once `parts` all started.
  static func runUntilStarted(
    _ names: [String], journal: Journal,
    configure: (String) -> (failsToStart: Bool, drain: Duration) = { _ in
      (false, .zero)
    }
  ) async -> (ServiceGroup, [FakePart], Task<Void, any Error>) {
    let (started, allStarted) = AsyncStream<Void>.makeStream()
    var parts: [FakePart] = []
    for (index, name) in names.enumerated() {
      let options = configure(name)
      let isLast = index == names.count - 1
      let onStarted: @Sendable () -> Void = { if isLast { allStarted.yield() } }
      parts.append(
        FakePart(
          name, journal: journal, failsToStart: options.failsToStart, drain: options.drain,
          onStarted: onStarted))
    }
    let group = ServiceGroup(services: parts, logger: .discarding())
    let running = Task { try await group.run(handlingSignals: false) }
    for await _ in started { break }
    return (group, parts, running)
  }

  @Test func startsInOrderAndStopsInReverseOnAGracefulShutdown() async throws {
    let journal = Journal()
    let (group, _, running) = await Self.runUntilStarted(["database", "broker", "http"], journal: journal)
    #expect(journal.all == ["start database", "start broker", "start http"])
    group.triggerGracefulShutdown()
    try await running.value
    #expect(
      journal.all == [
        "start database", "start broker", "start http", "stop http", "stopped http", "stop broker",
        "stopped broker", "stop database", "stopped database",
      ])
  }

  @Test func eachServiceIsAwaitedUntilItsRunReturnsBeforeTheOneBeforeItIsAsked() async throws {
    let journal = Journal()
    let (group, _, running) = await Self.runUntilStarted(["relay", "consumer", "http"], journal: journal) {
      name in (false, name == "relay" ? .zero : .milliseconds(100))
    }
    group.triggerGracefulShutdown()
    try await running.value
    #expect(
      Array(journal.all.dropFirst(3)) == [
        "stop http", "stopped http", "stop consumer", "stopped consumer", "stop relay", "stopped relay",
      ])
  }

  @Test func aShutdownAskedBeforeRunningStopsRightAfterStarting() async throws {
    let journal = Journal()
    let group = ServiceGroup(
      services: [FakePart("a", journal: journal), FakePart("b", journal: journal)], logger: .discarding())
    group.triggerGracefulShutdown()
    try await group.run(handlingSignals: false)
    #expect(journal.all == ["start a", "stop a", "stopped a"])
  }

  @Test func theNextServiceStartsOnlyOnceTheOneBeforeSignalledReady() async throws {
    let journal = Journal()
    let gate = Completion()
    let (reachedGate, atGate) = AsyncStream<Void>.makeStream()
    let slow = PlainService(name: "broker") {
      journal.record("start broker")
      atGate.yield()
      try await gate.wait()
      ServiceReadiness.signal()
      try await gracefulShutdown()
      journal.record("stop broker")
    }
    let (httpStarted, httpUp) = AsyncStream<Void>.makeStream()
    let http = FakePart("http", journal: journal, onStarted: { httpUp.yield() })
    let group = ServiceGroup(services: [slow, http], logger: .discarding())
    let running = Task { try await group.run(handlingSignals: false) }
    for await _ in reachedGate { break }
    try await Task.sleep(for: .milliseconds(50))
    #expect(journal.all == ["start broker"], "http started before the broker was ready")
    gate.finish()
    for await _ in httpStarted { break }
    group.triggerGracefulShutdown()
    try await running.value
    #expect(journal.all == ["start broker", "start http", "stop http", "stopped http", "stop broker"])
  }

  @Test func aFailingStartShutsDownTheStartedOnesAndThrowsNamingThePart() async throws {
    let journal = Journal()
    let sink = LogSink.memory()
    let group = ServiceGroup(
      services: [
        FakePart("database", journal: journal), FakePart("broker", journal: journal),
        FakePart("consumer", journal: journal, failsToStart: true), FakePart("http", journal: journal),
      ],
      logger: Logger(label: "test", sink: sink))
    let error = await #expect(throws: ServiceFailure.self) { try await group.run(handlingSignals: false) }
    #expect(error?.service == "consumer")
    #expect(error?.underlying is StartFailure)
    #expect(
      journal.all == [
        "start database", "start broker", "start consumer", "stop broker", "stopped broker", "stop database",
        "stopped database",
      ])
    #expect(
      sink.lines.contains { $0.contains("\"level\":\"error\"") && $0.contains("service ended unexpectedly") })
  }

  @Test func aPartWhoseLoopThrowsEndsTheGroupWithItsErrorAfterStoppingTheOthers() async throws {
    let journal = Journal()
    let (_, parts, running) = await Self.runUntilStarted(["database", "relay", "http"], journal: journal)
    parts[1].die(throwing: LoopFailure())
    let error = await #expect(throws: ServiceFailure.self) { try await running.value }
    #expect(error?.service == "relay")
    #expect(error?.underlying is LoopFailure)
    #expect(
      Array(journal.all.dropFirst(3)) == [
        "stop relay", "stopped relay", "stop http", "stopped http", "stop database", "stopped database",
      ])
  }

  @Test func aPartWhoseLoopReturnsEarlyEndsTheGroupWithAnError() async throws {
    let journal = Journal()
    let (_, parts, running) = await Self.runUntilStarted(["relay", "consumer", "http"], journal: journal)
    parts[1].die()
    let error = await #expect(throws: ServiceFailure.self) { try await running.value }
    #expect(error?.service == "consumer")
    #expect(error?.underlying == nil)
    #expect(journal.all.suffix(4) == ["stop http", "stopped http", "stop relay", "stopped relay"])
  }

  @Test func aPlainServiceThatReturnsBeforeShutdownEndsTheGroup() async throws {
    let journal = Journal()
    let (gone, vanish) = AsyncStream<Void>.makeStream()
    let group = ServiceGroup(
      services: [
        FakePart("database", journal: journal),
        PlainService(name: "sweeper") {
          ServiceReadiness.signal()
          for await _ in gone { break }
        },
      ],
      logger: .discarding())
    let running = Task { try await group.run(handlingSignals: false) }
    try await Task.sleep(for: .milliseconds(50))
    vanish.yield()
    let error = await #expect(throws: ServiceFailure.self) { try await running.value }
    #expect(error?.service == "sweeper")
    #expect(journal.all == ["start database", "stop database", "stopped database"])
  }
}

@Suite struct GracefulShutdownTests {
  @Test func theHandlerRunsWhenTheServiceIsAskedToShutDown() async throws {
    let shutdown = GracefulShutdown()
    let (told, tell) = AsyncStream<Void>.makeStream()
    let running = Task {
      await shutdown.scope {
        await withGracefulShutdownHandler {
          for await _ in told { break }
          return isShuttingDownGracefully
        } onGracefulShutdown: {
          tell.yield()
        }
      }
    }
    try await Task.sleep(for: .milliseconds(20))
    shutdown.trigger()
    #expect(await running.value)
  }

  @Test func aHandlerRegisteredAfterTheShutdownRunsAtOnce() async {
    let shutdown = GracefulShutdown()
    shutdown.trigger()
    let ran = Mutex(false)
    await shutdown.scope {
      await withGracefulShutdownHandler {
      } onGracefulShutdown: {
        ran.withLock { $0 = true }
      }
    }
    #expect(ran.withLock { $0 })
  }

  @Test func waitingForAShutdownEndsWithCancellation() async {
    let waiting = Task { try await GracefulShutdown().scope { try await gracefulShutdown() } }
    waiting.cancel()
    await #expect(throws: CancellationError.self) { try await waiting.value }
  }

  @Test func everyWaiterOfACompletionGetsTheFirstResult() async throws {
    struct First: Error {}
    let completion = Completion()
    let waiters = (0..<3).map { _ in Task { try await completion.wait() } }
    try await Task.sleep(for: .milliseconds(20))
    completion.finish(throwing: First())
    completion.finish()
    for waiter in waiters { await #expect(throws: First.self) { try await waiter.value } }
  }

  @Test func theFirstOfSeveralCompletionsEndsTheWait() async throws {
    let (first, second) = (Completion(), Completion())
    let waiting = Task { try await Completion.first(of: [first, second]) }
    second.finish()
    try await waiting.value
    #expect(!first.isFinished)
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
