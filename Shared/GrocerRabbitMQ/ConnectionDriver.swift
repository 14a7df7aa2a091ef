import CRabbitMQ
import Foundation
import GrocerAMQP
import GrocerCore
import GrocerRuntime
import Synchronization

/// The work a publisher, consumer or RPC endpoint does on its connection.
///
/// Every method runs on the connection's own thread, so implementations keep their
/// connection-bound state in plain properties touched only from these methods.
protocol ConnectionRole: AnyObject, Sendable {
  /// Declares what this role needs on a fresh channel (exchanges, queues, consumers, confirms).
  func setUp(_ channel: AMQPChannel) throws
  /// The connection is ready; `generation` counts connections (deliveries carry it).
  func didConnect(generation: Int)
  /// A method frame from the broker other than a close.
  func handle(method: amqp_method_t, channel: AMQPChannel) throws
  /// Runs after each batch of commands (to send coalesced acks).
  func flush(_ channel: AMQPChannel) throws
  /// The connection is gone: fail whatever waits for it.
  func failInFlight(_ error: AMQPError)
  /// Runs at least every `ConnectionDriver.tickInterval`, to expire time-outs.
  func tick(now: ContinuousClock.Instant)
  /// Runs after `tick` while connected, to ask the broker about what this role relies on; a
  /// throw fails the connection (which then reconnects and declares everything again). Returns
  /// whether the broker answered: librabbitmq reads that answer itself, unseen by the heartbeat
  /// watch, and a broker that sends something every interval sends no heartbeats.
  func check(_ channel: AMQPChannel, now: ContinuousClock.Instant) throws -> Bool
}

extension ConnectionRole {
  func flush(_ channel: AMQPChannel) throws {}
  func tick(now: ContinuousClock.Instant) {}
  func check(_ channel: AMQPChannel, now: ContinuousClock.Instant) throws -> Bool { false }
}

/// Owns one librabbitmq connection on a dedicated thread.
///
/// librabbitmq is blocking and not thread-safe, and Swift's cooperative pool has only a couple
/// of threads here, so each connection gets its own `Thread` that polls the socket next to an
/// eventfd; other threads hand it work through `submit`, which queues a closure and writes the
/// eventfd. The reconnect rules live in `ConnectionStateMachine`; this class performs them.
final class ConnectionDriver: @unchecked Sendable {
  /// A piece of work for the connection thread. `run` owns its continuation once called (it
  /// must register it with the role before anything can throw); `reject` is called instead when
  /// there is no connection.
  struct Command: Sendable {
    let run: @Sendable (AMQPChannel) throws -> Void
    let reject: @Sendable (AMQPError) -> Void
  }

  static let tickInterval: Duration = .milliseconds(50)

  let configuration: AMQPConfiguration
  private let logger: Logger
  private let wakeFD: Int32
  /// Queued work; `closed` once the thread has taken its last batch, so nothing can be queued
  /// after it and wait forever.
  private let commands = Mutex<(queue: [Command], closed: Bool)>(([], false))
  private let stopRequested = Atomic<Bool>(false)
  private let connectedFlag = Atomic<Bool>(false)
  private let generationCounter = Atomic<Int>(0)
  private let attempts = Atomic<Int>(0)
  private let finished = Mutex<(done: Bool, waiters: [CheckedContinuation<Void, Never>])>((false, []))
  private let started = Atomic<Bool>(false)
  /// Tasks in `start` or `waitUntilConnected`, resumed by the connection thread (or their timer)
  /// instead of polling `isConnected`.
  private let waiters = Mutex(ConnectionWaiters())
  /// Set by `failLoop`: the loop ends with it on its next turn, as if the thread had died.
  private let loopFailure = Mutex<(any Error)?>(nil)
  /// Whether the thread began running (1) or `start` gave up on it first (2): a thread that
  /// never starts must end the driver too, not leave it waiting forever.
  private let threadState = Atomic<Int>(0)
  /// Finished when the connection thread has ended: without error after `shutdown`, with a
  /// `ConnectionLoopEnded` if it ended (or never began) for any other reason.
  let stopped = Completion()

  // Touched only on the connection thread (and `role` cleared when it ends).
  private var role: (any ConnectionRole)?
  private var machine: ConnectionStateMachine
  private var connection: amqp_connection_state_t?
  private var reconnectAt: ContinuousClock.Instant?
  /// When the socket last had something to read (broker heartbeats count).
  private var lastInbound = ContinuousClock.now
  /// Which of `configuration.urls` the next attempt tries first: the one after the node a
  /// connection was lost with, so a node that died is tried last.
  private var firstURL = 0
  /// Which of `configuration.urls` the last connection went to.
  private var connectedIndex: Int?
  /// The node of the connection now open (`host:port`), nil between connections.
  private let node = Mutex<String?>(nil)
  /// Connections opened again after one was lost, and those that went to another node (in
  /// `/metrics` when the part was given a registry, else in one of the driver's own).
  private let reconnects: Counter
  private let failoverCount: Counter

  init(configuration: AMQPConfiguration, logger: Logger, metrics: MetricsRegistry? = nil) {
    self.configuration = configuration
    let registry = metrics ?? MetricsRegistry()
    let labels = [("connection", configuration.connectionName)]
    self.reconnects = registry.counter(
      "amqp_reconnects_total", help: "Broker connections opened again after one was lost.", labels: labels)
    self.failoverCount = registry.counter(
      "amqp_failovers_total", help: "Broker reconnections that went to another node.", labels: labels)
    self.logger = logger.with(["amqp.connection": configuration.connectionName])
    self.machine = ConnectionStateMachine(backoff: configuration.reconnectBackoff)
    self.wakeFD = eventfd(0, Int32(EFD_NONBLOCK | EFD_CLOEXEC))
  }

  deinit {
    close(wakeFD)
  }

  /// True while the connection is up and its topology declared.
  var isConnected: Bool { connectedFlag.load(ordering: .acquiring) }

  /// Counts successful connections; a delivery from an older generation cannot be acked.
  var generation: Int { generationCounter.load(ordering: .acquiring) }

  /// The broker node (`host:port`) of the connection now open; nil while there is none.
  var connectedNode: String? { node.withLock { $0 } }

  /// How many connections went to another node than the connection before them.
  var failovers: Int { failoverCount.value }

  /// Starts the thread and waits for the first connection attempt to end (up to the connect
  /// time-out plus a little). If it failed, the thread keeps retrying in the background.
  func start(role: any ConnectionRole) async {
    guard !started.exchange(true, ordering: .acquiringAndReleasing) else { return }
    self.role = role
    let thread = Thread { [self] in
      // `start` may have given up on this thread already (see below): then it must not run.
      guard threadState.compareExchange(expected: 0, desired: 1, ordering: .acquiringAndReleasing).exchanged
      else { return }
      self.runLoop()
    }
    thread.name = "amqp-\(configuration.connectionName)"
    thread.start()
    _ = await wait(for: .firstAttempt, timeout: configuration.connectTimeout + .seconds(2))
    // Foundation ignores a failed pthread_create: a thread that has not even begun by now never
    // will, and the part must fail rather than wait for a connection that cannot come.
    if threadState.compareExchange(expected: 0, desired: 2, ordering: .acquiringAndReleasing).exchanged {
      logger.error("the connection thread never started")
      endLoop(
        ConnectionLoopEnded(connection: configuration.connectionName, reason: "its thread never started"))
    }
  }

  /// Waits until connected; returns false on time-out (or at once if the driver has stopped).
  func waitUntilConnected(timeout: Duration) async -> Bool {
    await wait(for: .connection, timeout: timeout)
  }

  /// Ends the connection loop with `error` on its next turn, closing the connection as a
  /// shutdown would; `stopped` then throws it. For fault drills: a loop that dies on its own.
  func failLoop(with error: any Error) {
    loopFailure.withLock { $0 = $0 ?? error }
    wake()
  }

  /// Suspends until `awaited` happened (true), or `timeout` passed or the thread ended (false).
  /// Registered under the lock the thread resumes under, so a signal is never missed.
  private func wait(for awaited: ConnectionWaiters.Awaited, timeout: Duration) async -> Bool {
    await withCheckedContinuation { (continuation: CheckedContinuation<Bool, Never>) in
      enum Outcome { case now(Bool), registered(Int) }
      let outcome = waiters.withLock { state -> Outcome in
        if isConnected || (awaited == .firstAttempt && attempts.load(ordering: .acquiring) > 0) {
          return .now(true)
        }
        return state.ended ? .now(false) : .registered(state.add(awaited, continuation))
      }
      guard case .registered(let id) = outcome else {
        if case .now(let result) = outcome { continuation.resume(returning: result) }
        return
      }
      // Started only once registered, so it cannot fire before there is a waiter to resume.
      let timer = Task { [self] in
        try? await Task.sleep(for: timeout)
        if !Task.isCancelled { waiters.withLock { $0.remove(id) }?.resume(returning: false) }
      }
      waiters.withLock { $0.setTimer(timer, for: id) }
    }
  }

  /// Resumes the waiters that `event` satisfies (the thread ending resumes all, with false).
  private func signalWaiters(_ event: ConnectionWaiters.Event) {
    let resumed = waiters.withLock { $0.take(for: event) }
    for (continuation, timer) in resumed {
      timer?.cancel()
      continuation.resume(returning: event != .ended)
    }
  }

  /// Hands work to the connection thread.
  func submit(_ command: Command) {
    let accepted = commands.withLock { state -> Bool in
      guard !state.closed else { return false }
      state.queue.append(command)
      return true
    }
    if accepted { wake() } else { command.reject(.shuttingDown) }
  }

  func submit(
    run: @escaping @Sendable (AMQPChannel) throws -> Void,
    reject: @escaping @Sendable (AMQPError) -> Void = { _ in }
  ) {
    submit(Command(run: run, reject: reject))
  }

  /// Runs queued work, closes the connection politely and stops the thread.
  func shutdown() async {
    guard started.load(ordering: .acquiring) else { return }
    stopRequested.store(true, ordering: .releasing)
    wake()
    await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
      let done = finished.withLock { state -> Bool in
        if state.done { return true }
        state.waiters.append(continuation)
        return false
      }
      if done { continuation.resume() }
    }
  }

  private func wake() {
    var one: UInt64 = 1
    _ = withUnsafeBytes(of: &one) { write(wakeFD, $0.baseAddress, 8) }
  }

  private func drainWake() {
    var value: UInt64 = 0
    _ = withUnsafeMutableBytes(of: &value) { read(wakeFD, $0.baseAddress, 8) }
  }

  // MARK: - The connection thread

  private func runLoop() {
    var failure: (any Error)?
    perform(machine.handle(.connectRequested))
    while machine.state != .shutDown {
      waitForActivity()
      drainWake()
      runCommands()
      if stopRequested.load(ordering: .acquiring) {
        perform(machine.handle(.closed))
        break
      }
      if let error = loopFailure.withLock({ $0 }) {
        logger.error("the connection loop failed", ["error": "\(error)"])
        failure = error
        perform(machine.handle(.closed))
        break
      }
      if connection != nil { readFrames() }
      let now = ContinuousClock.now
      checkHeartbeat(now: now)
      if let at = reconnectAt, now >= at {
        reconnectAt = nil
        perform(machine.handle(.connectRequested))
      }
      role?.tick(now: now)
      if let connection, machine.isConnected {
        do {
          if try role?.check(AMQPChannel(connection: connection), now: now) == true { lastInbound = now }
        } catch {
          fail(error)
        }
      }
    }
    if failure == nil && !stopRequested.load(ordering: .acquiring) {
      // Nothing ends the loop but a shutdown or a failure today; should anything else, the
      // part must still fail rather than sit without a connection.
      failure = ConnectionLoopEnded(
        connection: configuration.connectionName, reason: "its loop ended without a shutdown")
    }
    endLoop(failure)
  }

  /// What follows the end of the connection thread (or a thread that never began): nothing more
  /// can be queued, waiters are resumed and `stopped` finishes, with `failure` unless a shutdown.
  private func endLoop(_ failure: (any Error)?) {
    // Whatever was queued after the stop can no longer run.
    for command in commands.withLock({ state in
      state.closed = true
      defer { state.queue = [] }
      return state.queue
    }) {
      command.reject(.shuttingDown)
    }
    role = nil
    signalWaiters(.ended)
    let waiters = finished.withLock { state in
      state.done = true
      defer { state.waiters = [] }
      return state.waiters
    }
    for waiter in waiters { waiter.resume() }
    stopped.finish(throwing: failure)
  }

  private func waitForActivity() {
    var timeout = Self.milliseconds(Self.tickInterval)
    if let at = reconnectAt {
      timeout = min(timeout, max(0, Self.milliseconds(at - ContinuousClock.now)))
    }
    var fds = [pollfd(fd: wakeFD, events: Int16(POLLIN), revents: 0)]
    if let connection {
      if amqp_frames_enqueued(connection) != 0 || amqp_data_in_buffer(connection) != 0 { timeout = 0 }
      fds.append(pollfd(fd: amqp_get_sockfd(connection), events: Int16(POLLIN), revents: 0))
    }
    _ = poll(&fds, nfds_t(fds.count), Int32(timeout))
    if fds.count > 1 && fds[1].revents != 0 { lastInbound = ContinuousClock.now }
  }

  /// The broker sends heartbeats while it lives; after two missed intervals of silence the
  /// connection is dead even if TCP has not noticed (a stopped or unplugged broker). We check
  /// this ourselves because librabbitmq only does when asked to wait with a time-out.
  private func checkHeartbeat(now: ContinuousClock.Instant) {
    guard connection != nil, machine.isConnected, configuration.heartbeat > 0 else { return }
    if now - lastInbound > .seconds(2 * configuration.heartbeat) {
      fail(AMQPError.connectionLost("heartbeat time-out"))
    }
  }

  static func milliseconds(_ duration: Duration) -> Int {
    let (seconds, attoseconds) = duration.components
    return Int(seconds) * 1000 + Int(attoseconds / 1_000_000_000_000_000)
  }

  private func runCommands() {
    let batch = commands.withLock { state in
      defer { state.queue = [] }
      return state.queue
    }
    guard !batch.isEmpty else { return }
    for (index, command) in batch.enumerated() {
      guard let connection, machine.isConnected else {
        command.reject(.notConnected)
        continue
      }
      do {
        try command.run(AMQPChannel(connection: connection))
      } catch {
        fail(error)
        for rest in batch[(index + 1)...] { rest.reject(.notConnected) }
        return
      }
    }
    if let connection, machine.isConnected {
      do { try role?.flush(AMQPChannel(connection: connection)) } catch { fail(error) }
    }
  }

  /// Reads every frame already available without blocking.
  private func readFrames() {
    // A microsecond rather than zero: with a zero time-out librabbitmq never checks the
    // heartbeat deadline, so a dead broker would go unnoticed.
    var wait = timeval(tv_sec: 0, tv_usec: 1)
    while let connection {
      var frame = amqp_frame_t()
      let status = amqp_simple_wait_frame_noblock(connection, &frame, &wait)
      if status == AMQP_STATUS_TIMEOUT.rawValue { return }
      guard status == AMQP_STATUS_OK.rawValue else {
        fail(
          AMQPError.connectionLost(String(cString: amqp_error_string2(status))))
        return
      }
      // Any frame is the broker alive, heartbeats included: librabbitmq may have read them into
      // its buffer earlier, when no poll saw the socket readable (a busy cart benchmark lost an
      // idle connection to a heartbeat time-out that way).
      lastInbound = ContinuousClock.now
      guard frame.frame_type == UInt8(AMQP_FRAME_METHOD) else {
        amqp_maybe_release_buffers(connection)
        continue
      }
      let method = frame.payload.method
      switch method.id {
      case GROCER_AMQP_CONNECTION_CLOSE, GROCER_AMQP_CHANNEL_CLOSE:
        fail(AMQPChannel.closeError(method))
        return
      case GROCER_AMQP_CONNECTION_BLOCKED:
        logger.warning("broker blocked the connection")
      case GROCER_AMQP_CONNECTION_UNBLOCKED:
        logger.notice("broker unblocked the connection")
      default:
        do {
          try role?.handle(method: method, channel: AMQPChannel(connection: connection))
        } catch {
          fail(error)
          return
        }
      }
      amqp_maybe_release_buffers(connection)
    }
  }

  private func fail(_ error: any Error) {
    let amqpError = error as? AMQPError ?? .connectionLost("\(error)")
    logger.warning("broker connection failed", ["error": amqpError.description])
    perform(machine.handle(.failed(amqpError)))
  }

  private func perform(_ actions: [ConnectionStateMachine.Action]) {
    for action in actions {
      switch action {
      case .connect:
        do {
          let opened = try Self.open(configuration: configuration, startingAt: firstURL)
          connection = opened.connection
          if let last = connectedIndex {
            reconnects.increment()
            if last != opened.index { failoverCount.increment() }
          }
          connectedIndex = opened.index
          node.withLock { $0 = "\(opened.endpoint.host):\(opened.endpoint.port)" }
          perform(machine.handle(.connected))
        } catch {
          attempts.add(1, ordering: .releasing)
          signalWaiters(.attemptFailed)
          logger.warning("cannot connect to the broker", ["error": "\(error)"])
          perform(machine.handle(.failed(error as? AMQPError ?? .connectionLost("\(error)"))))
        }
      case .declareTopology:
        guard let connection else { continue }
        do {
          try role?.setUp(AMQPChannel(connection: connection))
          perform(machine.handle(.topologyDeclared))
        } catch {
          attempts.add(1, ordering: .releasing)
          signalWaiters(.attemptFailed)
          fail(error)
        }
      case .markConnected:
        lastInbound = ContinuousClock.now
        let generation = generationCounter.add(1, ordering: .acquiringAndReleasing).newValue
        connectedFlag.store(true, ordering: .releasing)
        attempts.add(1, ordering: .releasing)
        signalWaiters(.connected)
        logger.info(
          "connected to the broker",
          ["amqp.generation": String(generation), "amqp.node": connectedNode ?? ""])
        role?.didConnect(generation: generation)
      case .destroyConnection:
        connectedFlag.store(false, ordering: .releasing)
        if let connection { amqp_destroy_connection(connection) }
        connection = nil
        forgetNode()
      case .failInFlight(let error):
        connectedFlag.store(false, ordering: .releasing)
        role?.failInFlight(error)
      case .scheduleReconnect(let delay):
        reconnectAt = ContinuousClock.now + delay
      case .closeConnection:
        connectedFlag.store(false, ordering: .releasing)
        if let connection {
          amqp_channel_close(connection, 1, AMQP_REPLY_SUCCESS)
          amqp_connection_close(connection, AMQP_REPLY_SUCCESS)
          amqp_destroy_connection(connection)
        }
        connection = nil
        forgetNode()
      }
    }
  }

  /// The connection is gone: the next attempt starts with the node after its node.
  private func forgetNode() {
    node.withLock { $0 = nil }
    if let connectedIndex { firstURL = (connectedIndex + 1) % max(1, configuration.urls.count) }
  }

  /// Opens a connection and channel 1 to the first of `configuration.urls` that answers, from
  /// `startingAt` on and round; throws the last node's error when none does. On failure nothing
  /// is left allocated.
  static func open(configuration: AMQPConfiguration, startingAt first: Int) throws -> (
    connection: amqp_connection_state_t, endpoint: AMQPEndpoint, index: Int
  ) {
    let urls = configuration.urls.isEmpty ? [configuration.url] : configuration.urls
    var failure: (any Error)?
    for offset in 0..<urls.count {
      let index = (first + offset) % urls.count
      do {
        let endpoint = try AMQPEndpoint(url: urls[index])
        return (try open(endpoint, configuration), endpoint, index)
      } catch {
        failure = error
      }
    }
    throw failure ?? AMQPError.invalidURL("")
  }

  /// `open(configuration:startingAt:)` from the first node on, for one-off connections.
  static func open(configuration: AMQPConfiguration) throws -> amqp_connection_state_t {
    try open(configuration: configuration, startingAt: 0).connection
  }

  private static func open(_ endpoint: AMQPEndpoint, _ configuration: AMQPConfiguration) throws
    -> amqp_connection_state_t
  {
    guard let connection = amqp_new_connection() else {
      throw AMQPError.library(operation: "amqp_new_connection", message: "out of memory")
    }
    do {
      guard let socket = amqp_tcp_socket_new(connection) else {
        throw AMQPError.library(operation: "amqp_tcp_socket_new", message: "out of memory")
      }
      let arena = CStringArena()
      let timeoutMilliseconds = milliseconds(configuration.connectTimeout)
      var timeout = timeval(
        tv_sec: timeoutMilliseconds / 1000, tv_usec: (timeoutMilliseconds % 1000) * 1000)
      try AMQPChannel.status(
        amqp_socket_open_noblock(socket, arena.cString(endpoint.host), Int32(endpoint.port), &timeout),
        "connect to \(endpoint.host):\(endpoint.port)")
      var entries = [
        amqp_table_entry_t(
          key: arena.bytes("connection_name"),
          value: grocer_amqp_utf8_value(arena.bytes(configuration.connectionName)))
      ]
      let reply = entries.withUnsafeMutableBufferPointer { buffer in
        var properties = amqp_table_t(num_entries: Int32(buffer.count), entries: buffer.baseAddress)
        return grocer_amqp_login_plain(
          connection, arena.cString(endpoint.vhost), 0, 131_072, Int32(configuration.heartbeat),
          &properties, arena.cString(endpoint.user), arena.cString(endpoint.password))
      }
      try AMQPChannel.check(reply, "login")
      amqp_channel_open(connection, 1)
      try AMQPChannel(connection: connection).check("channel.open")
      return connection
    } catch {
      amqp_destroy_connection(connection)
      throw error
    }
  }
}

/// The tasks waiting on a `ConnectionDriver` (in `start` or `waitUntilConnected`), each with the
/// timer that resumes it if nothing else does first.
struct ConnectionWaiters {
  /// What a waiter waits for: a connection, or (`start`) the first attempt's end either way.
  enum Awaited { case connection, firstAttempt }
  /// What the connection thread reports.
  enum Event { case connected, attemptFailed, ended }

  private var next = 0
  private var waiting:
    [Int: (awaited: Awaited, continuation: CheckedContinuation<Bool, Never>, timer: Task<Void, Never>?)] =
      [:]
  /// The thread has ended: nothing would resume a new waiter.
  private(set) var ended = false

  mutating func add(_ awaited: Awaited, _ continuation: CheckedContinuation<Bool, Never>) -> Int {
    defer { next += 1 }
    waiting[next] = (awaited, continuation, nil)
    return next
  }

  /// Keeps the timer to cancel if the thread resumes the waiter first; cancels it at once if
  /// the waiter was already resumed.
  mutating func setTimer(_ timer: Task<Void, Never>, for id: Int) {
    if waiting[id] != nil { waiting[id]?.timer = timer } else { timer.cancel() }
  }

  mutating func remove(_ id: Int) -> CheckedContinuation<Bool, Never>? {
    waiting.removeValue(forKey: id)?.continuation
  }

  /// Removes and returns the waiters `event` satisfies (`ended`: all, and no more are added).
  mutating func take(for event: Event) -> [(CheckedContinuation<Bool, Never>, Task<Void, Never>?)] {
    if event == .ended { ended = true }
    let ids = waiting.keys.filter { id in
      event != .attemptFailed || waiting[id]?.awaited == .firstAttempt
    }
    return ids.compactMap { id in waiting.removeValue(forKey: id).map { ($0.continuation, $0.timer) } }
  }
}

/// Why a connection's thread ended without a shutdown being asked: the publisher, consumer or
/// RPC endpoint on it can no longer work, so its service's `run()` fails with this.
public struct ConnectionLoopEnded: Error, CustomStringConvertible {
  /// The connection's name (`AMQPConfiguration.connectionName`).
  public let connection: String
  public let reason: String

  public init(connection: String, reason: String) {
    self.connection = connection
    self.reason = reason
  }

  public var description: String { "the broker connection \(connection) ended: \(reason)" }
}
