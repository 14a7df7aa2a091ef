import Foundation
import GrocerAMQP
import GrocerCore
import GrocerRabbitMQ
import GrocerRuntime
import GrocerTestSupport
import Testing

/// How waiting for a connection ends, against the real broker.
@Suite struct ConnectionLifecycleTests {
  init() throws { try TestBroker.ensureRunning() }

  let logger = Logger.discarding()

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
