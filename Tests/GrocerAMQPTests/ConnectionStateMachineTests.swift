import GrocerAMQP
import Testing

@Suite struct ConnectionStateMachineTests {
  typealias Machine = ConnectionStateMachine
  let backoff = ReconnectBackoff(minimum: .milliseconds(100), maximum: .seconds(5))

  func machine(jitter: Double = 1) -> Machine {
    Machine(backoff: backoff, jitter: { jitter })
  }

  /// Drives a machine to `.connected`.
  func connected() -> Machine {
    var machine = machine()
    _ = machine.handle(.connectRequested)
    _ = machine.handle(.connected)
    _ = machine.handle(.topologyDeclared)
    return machine
  }

  @Test func aStartConnectsDeclaresTopologyAndThenReportsConnected() {
    var machine = machine()
    #expect(machine.handle(.connectRequested) == [.connect])
    #expect(machine.state == .connecting(attempt: 0))
    #expect(machine.handle(.connected) == [.declareTopology])
    #expect(machine.state == .declaringTopology(attempt: 0))
    #expect(!machine.isConnected)
    #expect(machine.handle(.topologyDeclared) == [.markConnected])
    #expect(machine.isConnected)
  }

  @Test func aFailureWhileConnectedFailsInFlightWorkAndReconnectsAfterTheMinimumDelay() {
    var machine = connected()
    let actions = machine.handle(.failed(.brokerClosed(code: 320, text: "CONNECTION_FORCED")))
    #expect(
      actions == [
        .destroyConnection, .failInFlight(.brokerClosed(code: 320, text: "CONNECTION_FORCED")),
        .scheduleReconnect(after: .milliseconds(100)),
      ])
    #expect(machine.state == .waitingToReconnect(attempt: 1))
    #expect(machine.handle(.connectRequested) == [.connect])
    #expect(machine.state == .connecting(attempt: 1))
  }

  /// On a cluster, a lost connection waits for the quorum queues' leaders to be re-elected;
  /// failures to connect after it back off as usual.
  @Test func aLostConnectionWaitsAtLeastTheFailoverDelayBeforeItsFirstReconnect() {
    var machine = Machine(
      backoff: ReconnectBackoff(minimum: .milliseconds(100), maximum: .seconds(5), afterLoss: .seconds(1)),
      jitter: { 1 })
    _ = machine.handle(.connectRequested)
    #expect(machine.handle(.failed(.timeout)).last == .scheduleReconnect(after: .milliseconds(100)))
    _ = machine.handle(.connectRequested)
    _ = machine.handle(.connected)
    _ = machine.handle(.topologyDeclared)
    #expect(machine.handle(.failed(.timeout)).last == .scheduleReconnect(after: .seconds(1)))
    _ = machine.handle(.connectRequested)
    #expect(machine.handle(.failed(.timeout)).last == .scheduleReconnect(after: .milliseconds(200)))
  }

  @Test func repeatedConnectFailuresBackOffExponentiallyUpToTheMaximum() {
    var machine = machine()
    _ = machine.handle(.connectRequested)
    var delays: [Duration] = []
    for _ in 0..<10 {
      let actions = machine.handle(.failed(.connectionLost("refused")))
      #expect(actions.first == .destroyConnection)
      #expect(!actions.contains { if case .failInFlight = $0 { true } else { false } })
      guard case .scheduleReconnect(let delay) = actions.last else {
        Issue.record("no reconnect scheduled: \(actions)")
        return
      }
      delays.append(delay)
      #expect(machine.handle(.connectRequested) == [.connect])
    }
    #expect(
      delays.prefix(4) == [.milliseconds(100), .milliseconds(200), .milliseconds(400), .milliseconds(800)])
    #expect(delays.last == .seconds(5))
    #expect(zip(delays, delays.dropFirst()).allSatisfy { $0 <= $1 })
  }

  @Test func aFailedTopologyDeclarationCountsAsAFailedAttempt() {
    var machine = machine()
    _ = machine.handle(.connectRequested)
    _ = machine.handle(.connected)
    #expect(
      machine.handle(.failed(.brokerClosed(code: 406, text: "PRECONDITION_FAILED")))
        == [.destroyConnection, .scheduleReconnect(after: .milliseconds(100))])
    #expect(machine.state == .waitingToReconnect(attempt: 1))
  }

  @Test func aSuccessfulConnectionResetsTheBackoff() {
    var machine = machine()
    _ = machine.handle(.connectRequested)
    _ = machine.handle(.failed(.timeout))
    _ = machine.handle(.connectRequested)
    _ = machine.handle(.failed(.timeout))
    _ = machine.handle(.connectRequested)
    _ = machine.handle(.connected)
    _ = machine.handle(.topologyDeclared)
    #expect(machine.handle(.failed(.timeout)).last == .scheduleReconnect(after: .milliseconds(100)))
  }

  @Test func jitterShortensTheDelayToNoLessThanHalf() {
    #expect(backoff.delay(attempt: 3, jitter: 0) == .milliseconds(400))
    #expect(backoff.delay(attempt: 3, jitter: 1) == .milliseconds(800))
    #expect(backoff.delay(attempt: 0, jitter: 0) == .milliseconds(100))
    #expect(backoff.delay(attempt: 50, jitter: 0.5) <= .seconds(5))
  }

  @Test func shutdownFromEachStateDoesTheRightCleanup() {
    var idle = machine()
    #expect(idle.handle(.closed) == [])
    #expect(idle.state == .shutDown)

    var connecting = machine()
    _ = connecting.handle(.connectRequested)
    #expect(connecting.handle(.closed) == [.destroyConnection])

    var declaring = machine()
    _ = declaring.handle(.connectRequested)
    _ = declaring.handle(.connected)
    #expect(declaring.handle(.closed) == [.destroyConnection])

    var up = connected()
    #expect(up.handle(.closed) == [.failInFlight(.shuttingDown), .closeConnection])

    var waiting = connected()
    _ = waiting.handle(.failed(.timeout))
    #expect(waiting.handle(.closed) == [])
    #expect(waiting.state == .shutDown)
  }

  @Test func nothingHappensAfterShutdown() {
    var machine = connected()
    _ = machine.handle(.closed)
    let events: [Machine.Event] = [
      .connectRequested, .connected, .topologyDeclared, .failed(.timeout), .closed,
    ]
    for event in events {
      #expect(machine.handle(event) == [])
      #expect(machine.state == .shutDown)
    }
  }

  @Test func staleOrDuplicateEventsAreIgnoredInEveryState() {
    // Every (state, event) pair that is not a transition must leave the state alone.
    var idle = machine()
    for event: Machine.Event in [.connected, .topologyDeclared, .failed(.timeout)] {
      #expect(idle.handle(event) == [])
      #expect(idle.state == .idle)
    }
    var connecting = machine()
    _ = connecting.handle(.connectRequested)
    for event: Machine.Event in [.connectRequested, .topologyDeclared] {
      #expect(connecting.handle(event) == [])
      #expect(connecting.state == .connecting(attempt: 0))
    }
    var declaring = machine()
    _ = declaring.handle(.connectRequested)
    _ = declaring.handle(.connected)
    for event: Machine.Event in [.connectRequested, .connected] {
      #expect(declaring.handle(event) == [])
      #expect(declaring.state == .declaringTopology(attempt: 0))
    }
    var up = connected()
    for event: Machine.Event in [.connectRequested, .connected, .topologyDeclared] {
      #expect(up.handle(event) == [])
      #expect(up.isConnected)
    }
    var waiting = connected()
    _ = waiting.handle(.failed(.timeout))
    for event: Machine.Event in [.connected, .topologyDeclared, .failed(.timeout)] {
      #expect(waiting.handle(event) == [])
      #expect(waiting.state == .waitingToReconnect(attempt: 1))
    }
  }
}

@Suite struct AMQPConfigurationTests {
  @Test func defaultsPointAtTheLocalBroker() throws {
    let configuration = AMQPConfiguration(settings: .init([:]))
    #expect(configuration.url == "amqp://guest:guest@127.0.0.1:5672/")
    #expect(configuration.heartbeat == 10)
    #expect(
      configuration.reconnectBackoff == ReconnectBackoff(minimum: .milliseconds(100), maximum: .seconds(5)))
  }

  @Test func theURLComesFromTheEnvironment() {
    let configuration = AMQPConfiguration(
      settings: .init(["GROCER_AMQP_URL": "amqp://u:p@example:5673/v", "GROCER_AMQP_HEARTBEAT": "30"]))
    #expect(configuration.url == "amqp://u:p@example:5673/v")
    #expect(configuration.urls == ["amqp://u:p@example:5673/v"])
    #expect(configuration.heartbeat == 30)
  }

  /// A cluster's nodes come in an order of the process's own, every one of them once.
  @Test func aClustersURLsComeShuffledAndReplaceTheSingleURL() {
    let nodes = (1...3).map { "amqp://guest:guest@127.0.0.1:\(5671 + $0)/" }
    var orders = Set<[String]>()
    for _ in 0..<50 {
      let configuration = AMQPConfiguration(
        settings: .init([
          "GROCER_AMQP_URL": "amqp://u:p@example:5673/v",
          "GROCER_AMQP_URLS": " \(nodes.joined(separator: " , ")), ",
        ]))
      #expect(configuration.urls.sorted() == nodes)
      #expect(configuration.url == configuration.urls[0])
      orders.insert(configuration.urls)
    }
    #expect(orders.count > 1, "50 processes would not all take the nodes in one order")
    let cluster = AMQPConfiguration(settings: .init(["GROCER_AMQP_URLS": nodes.joined(separator: ",")]))
    #expect(cluster.reconnectBackoff.afterLoss == .seconds(1))
    let quick = AMQPConfiguration(
      settings: .init([
        "GROCER_AMQP_URLS": nodes.joined(separator: ","), "GROCER_AMQP_FAILOVER_DELAY_MS": "250",
      ]))
    #expect(quick.reconnectBackoff.afterLoss == .milliseconds(250))
    var single = AMQPConfiguration(settings: .init(["GROCER_AMQP_URLS": " , "]))
    #expect(single.urls == [AMQPConfiguration.defaultURL])
    #expect(single.reconnectBackoff.afterLoss == .zero)
    // A cluster behind one address (a Kubernetes Service) says so.
    let behindOneAddress = AMQPConfiguration(settings: .init(["GROCER_AMQP_FAILOVER_DELAY_MS": "1000"]))
    #expect(behindOneAddress.reconnectBackoff.afterLoss == .seconds(1))
    single.url = "amqp://guest:guest@127.0.0.1:5673/"
    #expect(single.urls == ["amqp://guest:guest@127.0.0.1:5673/"])
  }
}
