import Foundation
import GrocerAMQP
import GrocerCore
import GrocerRabbitMQ
import GrocerRuntime
import GrocerTestSupport
import Testing

/// How a consumer's `run()` ends, and how waiting for a connection ends, against the real broker.
@Suite struct ConnectionLifecycleTests {
  init() throws { try TestBroker.ensureRunning() }

  let logger = Logger.discarding()

  /// The drill fails the consumer's connection loop right after it connected: `run()` must
  /// throw, not go on waiting for a shutdown.
  @Test func aConsumerWhoseLoopFailsEndsItsRunWithAnError() async throws {
    let queue = uniqueName("loop-fails")
    let consumer = AMQPConsumer(
      configuration: TestBroker.configuration(), queue: QueueSpec(name: queue, bindingKeys: [queue]),
      logger: logger, metrics: MetricsRegistry(), handler: { _ in .ack }, failsAfterStart: true)
    let shutdown = GracefulShutdown()
    let run = Task { try await shutdown.scope { try await consumer.run() } }
    // If the failure went unnoticed, run() would end only here, and cleanly (a long time: the
    // test process's cooperative pool can stall for seconds while other suites run).
    let backstop = Task {
      try await Task.sleep(for: .seconds(30))
      shutdown.trigger()
    }
    let result = await run.result
    backstop.cancel()
    try await AMQPAdmin.deleteQueues(configuration: TestBroker.configuration(), [queue, "\(queue).parking"])

    #expect(!shutdown.isTriggered, "run() ended only because the backstop asked it to")
    guard case .failure(let error) = result else {
      Issue.record("run() returned cleanly after its connection loop failed")
      return
    }
    let failure = try #require(error as? ServiceFailure, "run() threw \(error)")
    #expect(failure.service == consumer.name)
    let ended = try #require(failure.underlying as? ConnectionLoopEnded, "underlying: \(failure)")
    #expect(ended.reason.contains("fault drill"))
    #expect(!consumer.isConnected)
  }

  /// A lost connection is normal: the consumer reconnects and `run()` goes on; a shutdown asked
  /// afterwards makes it return without error.
  @Test func aConsumerThatReconnectsKeepsRunningAndReturnsCleanlyOnShutdown() async throws {
    let queue = uniqueName("loop-reconnects")
    let connectionName = "grocer-test-\(UUID().uuidString)"
    let connects = Recorder<Int>()
    let ends = Recorder<String>()
    let consumer = AMQPConsumer(
      configuration: TestBroker.configuration(connectionName),
      queue: QueueSpec(name: queue, bindingKeys: [queue]), logger: logger, metrics: MetricsRegistry(),
      handler: { _ in .ack }, onConnected: { connects.append(1) })
    let shutdown = GracefulShutdown()
    let run = Task {
      do {
        try await shutdown.scope { try await consumer.run() }
        ends.append("returned")
      } catch {
        ends.append("threw \(error)")
        throw error
      }
    }
    try await withCleanup({
      shutdown.trigger()
      _ = await run.result
      try? await AMQPAdmin.deleteQueues(
        configuration: TestBroker.configuration(), [queue, "\(queue).parking"])
    }) {
      #expect(await eventually { connects.count == 1 })
      #expect(try await eventually { try await TestBroker.closeConnections(named: connectionName) == 1 })
      #expect(await eventually { connects.count == 2 && consumer.isConnected })
      // Give a wrongly ended run() time to show.
      try await Task.sleep(for: .milliseconds(300))
      #expect(ends.all.isEmpty, "run() ended after a reconnect: \(ends.all)")

      shutdown.trigger()
      let result = await run.result
      if case .failure(let error) = result { Issue.record("run() threw after a shutdown: \(error)") }
      #expect(ends.all == ["returned"])
      #expect(!consumer.isConnected)
    }
  }

  @Test func waitUntilConnectedReturnsTruePromptlyOnceConnected() async throws {
    let publisher = AMQPPublisher(
      configuration: TestBroker.configuration(), logger: logger, metrics: MetricsRegistry())
    let began = ContinuousClock.now
    // Waiting before the thread even runs: the thread resumes it when it connects.
    let waiter = Task { (await publisher.waitUntilConnected(timeout: .seconds(30)), ContinuousClock.now) }
    try await Task.sleep(for: .milliseconds(50))
    try await publisher.start()
    let startReturned = ContinuousClock.now
    #expect(publisher.isConnected)
    let (connected, resumedAt) = await waiter.value
    #expect(connected)
    // Well within its time-out, and resumed by the same signal as start (the bounds leave room
    // for a stalled cooperative pool while other suites run).
    #expect(resumedAt - began < .seconds(15))
    #expect(resumedAt - startReturned < .seconds(1))

    // Connected already: true at once, even with no time to wait.
    let asked = ContinuousClock.now
    #expect(await publisher.waitUntilConnected(timeout: .zero))
    #expect(ContinuousClock.now - asked < .seconds(1))

    // Stopped: false at once rather than at the time-out.
    await publisher.shutdown()
    let afterShutdown = ContinuousClock.now
    #expect(!(await publisher.waitUntilConnected(timeout: .seconds(30))))
    #expect(ContinuousClock.now - afterShutdown < .seconds(10))
  }

  @Test func waitUntilConnectedReturnsFalseAfterItsTimeoutWhenTheBrokerIsUnreachable() async throws {
    var configuration = TestBroker.configuration()
    configuration.url = "amqp://guest:guest@127.0.0.1:1/"
    configuration.connectTimeout = .milliseconds(500)
    let publisher = AMQPPublisher(configuration: configuration, logger: logger, metrics: MetricsRegistry())
    // start returns once the first attempt failed (refused at once).
    try await publisher.start()
    #expect(!publisher.isConnected)

    let waiting = ContinuousClock.now
    #expect(!(await publisher.waitUntilConnected(timeout: .milliseconds(400))))
    let waited = ContinuousClock.now - waiting
    #expect(waited >= .milliseconds(400))
    #expect(waited < .seconds(10))

    // A shutdown ends a longer wait at once, not at its 30 s time-out.
    let long = Task { await publisher.waitUntilConnected(timeout: .seconds(30)) }
    try await Task.sleep(for: .milliseconds(100))
    let stopping = ContinuousClock.now
    await publisher.shutdown()
    #expect(!(await long.value))
    #expect(ContinuousClock.now - stopping < .seconds(10))
  }
}
