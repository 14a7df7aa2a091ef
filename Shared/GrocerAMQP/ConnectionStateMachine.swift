/// The life of one broker connection as a value: events in, actions out, no I/O.
///
/// The connection thread performs the actions. Keeping the rules here lets the tests walk every
/// state and event without a broker: a failure while connected fails what is in flight and
/// schedules a reconnect; failures while connecting back off further; shutdown wins over all.
public struct ConnectionStateMachine: Sendable {
  public enum State: Hashable, Sendable {
    /// Not started.
    case idle
    /// Opening the socket and logging in; `attempt` failures happened since the last success.
    case connecting(attempt: Int)
    /// Logged in; declaring exchanges, queues and consumers.
    case declaringTopology(attempt: Int)
    /// Ready for work.
    case connected
    /// Waiting for the reconnect timer.
    case waitingToReconnect(attempt: Int)
    /// Shut down for good.
    case shutDown
  }

  public enum Event: Sendable {
    /// Start, or the reconnect timer fired.
    case connectRequested
    /// The socket is open and the login succeeded.
    case connected
    /// Topology and consumers are declared.
    case topologyDeclared
    /// Any library or broker error on the connection.
    case failed(AMQPError)
    /// The owner asked to shut down.
    case closed
  }

  public enum Action: Hashable, Sendable {
    /// Open a fresh connection.
    case connect
    /// Declare the exchanges, queues, bindings and consumers.
    case declareTopology
    /// Tell the owner the connection is ready (`isConnected`, `onConnected`).
    case markConnected
    /// Free the connection without closing handshakes (the only safe thing after an error).
    case destroyConnection
    /// Fail every operation waiting on this connection (confirms, replies).
    case failInFlight(AMQPError)
    /// Try again after this delay.
    case scheduleReconnect(after: Duration)
    /// Close the channel and connection politely, then free it.
    case closeConnection
  }

  public private(set) var state: State = .idle
  private let backoff: ReconnectBackoff
  private let jitter: @Sendable () -> Double

  /// - Parameter jitter: a number in 0...1 per reconnect; tests pass a constant.
  public init(
    backoff: ReconnectBackoff = ReconnectBackoff(),
    jitter: @escaping @Sendable () -> Double = { Double.random(in: 0...1) }
  ) {
    self.backoff = backoff
    self.jitter = jitter
  }

  public var isConnected: Bool { state == .connected }

  public mutating func handle(_ event: Event) -> [Action] {
    switch (state, event) {
    case (.shutDown, _):
      return []

    case (_, .closed):
      let previous = state
      state = .shutDown
      switch previous {
      case .connected: return [.failInFlight(.shuttingDown), .closeConnection]
      case .connecting, .declaringTopology: return [.destroyConnection]
      case .idle, .waitingToReconnect, .shutDown: return []
      }

    case (.idle, .connectRequested):
      state = .connecting(attempt: 0)
      return [.connect]
    case (.waitingToReconnect(let attempt), .connectRequested):
      state = .connecting(attempt: attempt)
      return [.connect]

    case (.connecting(let attempt), .connected):
      state = .declaringTopology(attempt: attempt)
      return [.declareTopology]
    case (.declaringTopology, .topologyDeclared):
      state = .connected
      return [.markConnected]

    case (.connecting(let attempt), .failed), (.declaringTopology(let attempt), .failed):
      state = .waitingToReconnect(attempt: attempt + 1)
      return [.destroyConnection, .scheduleReconnect(after: delay(attempt: attempt))]
    case (.connected, .failed(let error)):
      state = .waitingToReconnect(attempt: 1)
      return [
        .destroyConnection, .failInFlight(error),
        .scheduleReconnect(after: max(backoff.afterLoss, delay(attempt: 0))),
      ]

    // Everything else is stale or duplicate news (a second connect request, a late failure
    // report after the connection was already torn down): ignore it.
    case (.idle, _), (.connecting, _), (.declaringTopology, _), (.connected, _),
      (.waitingToReconnect, _):
      return []
    }
  }

  private func delay(attempt: Int) -> Duration {
    backoff.delay(attempt: attempt, jitter: jitter())
  }
}
