import CMicroHTTPD
import Foundation
import GrocerCore
import GrocerHTTP
import GrocerRuntime
import Synchronization

/// Why the HTTP server could not start.
public enum HTTPServerError: Error, Sendable {
  case invalidHost(String)
  case startFailed(host: String, port: Int)
}

/// The libmicrohttpd adapter: serves an `HTTPResponder` over HTTP/1.1.
///
/// MHD runs in poll mode (its epoll mode stalls at some connection counts, see PLATFORM.md):
/// `threadPoolSize` daemons of one thread each, without listening sockets of their own. One
/// acceptor thread takes every connection and hands it to the daemon holding the fewest
/// (`DaemonLoad`). MHD's own thread pool shares one listening socket and whichever thread wakes
/// first accepts: at 64 connections one of four threads got none and the others 154/228/243
/// units of CPU; SO_REUSEPORT daemons spread them by a hash (37 and 27 over two threads in one
/// run), and let a second server bind the same port unnoticed. A request the responder answers in
/// `respondImmediately` is answered inside MHD's callback; otherwise the connection is suspended
/// and resumed from `respond(to:completion:)` (a Task awaiting `respond`, or a route's own
/// callback), so no MHD thread ever waits on Swift work.
///
/// `shutdown` stops accepting, waits (bounded) for async handlers in flight, answers any still
/// running with 503, then stops the daemon: MHD aborts if a connection is still suspended.
public final class HTTPServer: LifecycleService {
  public let name = "http"
  public let configuration: HTTPServerConfiguration
  private let core: ServerCore
  private let daemons = Mutex<[DaemonHandle]>([])
  private let acceptor = Mutex<ConnectionAcceptor?>(nil)
  private let boundPort = Atomic<Int>(0)

  public init(configuration: HTTPServerConfiguration, responder: any HTTPResponder, logger: Logger) {
    self.configuration = configuration
    let connections = ConnectionGuard(
      requestTimeoutSeconds: configuration.connectionTimeoutSeconds, limit: configuration.connectionLimit)
    self.core = ServerCore(
      responder: responder, logger: logger, maxBodyBytes: configuration.maxBodyBytes,
      connections: connections,
      yieldEvery: configuration.yieldEvery)
  }

  /// The port the server is bound to (the ephemeral one when configured with 0); 0 before start.
  public var port: Int { boundPort.load(ordering: .acquiring) }

  /// TCP connections open now.
  public var openConnections: Int { core.connections.open }
  /// TCP connections each transport thread serves now, in thread order.
  public var connectionsPerThread: [Int] { core.load.perDaemon }
  /// Connections closed for not delivering a request within the connection timeout, since start.
  public var timedOutConnections: Int { core.connections.timedOut }
  /// Idle connections closed (or new ones refused) at the connection limit, since start.
  public var shedConnections: Int { core.connections.shed }

  public func start() async throws {
    let config = configuration
    let cls = Unmanaged.passUnretained(core).toOpaque()
    // MHD's own limit sits above ours: the guard sheds idle connections at `connectionLimit`, and
    // those close a moment later on MHD's threads. At MHD's limit new clients are closed at once.
    // The guard counts across all daemons; each daemon may hold them all.
    let hardLimit = config.connectionLimit + max(64, config.connectionLimit / 8)
    Self.raiseDescriptorLimit(toFit: hardLimit, logger: core.logger)
    let listening = try ConnectionAcceptor(
      host: config.host, port: config.port, load: core.load, logger: core.logger)
    var started: [DaemonHandle] = []
    for _ in 0..<config.threadPoolSize {
      guard let daemon = Self.startDaemon(config, limit: hardLimit, cls: cls) else {
        for handle in started { MHD_stop_daemon(handle.pointer) }
        listening.stop()
        throw HTTPServerError.startFailed(host: config.host, port: config.port)
      }
      started.append(DaemonHandle(pointer: daemon))
    }
    core.load.assign(started)
    daemons.withLock { $0 = started }
    acceptor.withLock { $0 = listening }
    core.connections.start()
    listening.start()
    boundPort.store(listening.port, ordering: .releasing)
    core.logger.notice(
      "http server listening",
      [
        "http.host": config.host, "http.port": String(listening.port),
        "http.threads": String(config.threadPoolSize),
      ])
  }

  /// Returns when the accepting thread has ended (after `shutdown`, or if it ever dies).
  public func finished() async throws {
    try await acceptor.withLock { $0?.ended }?.wait()
  }

  /// One daemon with one poll thread and no listening socket: the acceptor adds its connections.
  private static func startDaemon(
    _ config: HTTPServerConfiguration, limit: Int, cls: UnsafeMutableRawPointer
  ) -> OpaquePointer? {
    let flags =
      MHD_USE_POLL_INTERNAL_THREAD.rawValue | MHD_ALLOW_SUSPEND_RESUME.rawValue
      | MHD_USE_NO_LISTEN_SOCKET.rawValue | MHD_USE_ITC.rawValue | MHD_USE_SUPPRESS_DATE_NO_CLOCK.rawValue
    let options: [MHD_OptionItem] = [
      .init(option: .CONNECTION_LIMIT, value: limit, ptr_value: nil),
      .init(option: .CONNECTION_TIMEOUT, value: config.connectionTimeoutSeconds, ptr_value: nil),
      .init(option: .CONNECTION_MEMORY_LIMIT, value: config.connectionMemoryLimit, ptr_value: nil),
      .init(option: .STRICT_FOR_CLIENT, value: 1, ptr_value: nil),
      .init(option: .END, value: 0, ptr_value: nil),
    ]
    return grocer_mhd_start_daemon(
      flags, 0, grocerAccessHandler, cls, grocerRequestCompleted, grocerURILog, grocerNotifyConnection,
      options)
  }

  public func shutdown() async {
    let handles = daemons.withLock { $0 }
    guard !handles.isEmpty else { return }
    acceptor.withLock { $0 }?.stop()
    _ = await core.endAllStreams(within: .seconds(2))
    _ = await core.asyncInFlight.drain(within: configuration.shutdownGracePeriod)
    let forced = core.resumeAllSuspended()
    if forced > 0 {
      core.logger.warning(
        "answered unfinished requests with 503 at shutdown", ["http.requests": String(forced)])
      _ = await core.asyncInFlight.drain(within: .seconds(1))
    }
    daemons.withLock { $0 = [] }
    for handle in handles { MHD_stop_daemon(handle.pointer) }
    core.connections.stop()
    acceptor.withLock { $0 = nil }
    boundPort.store(0, ordering: .releasing)
    core.logger.notice("http server stopped")
  }

  deinit {
    let handles = daemons.withLock { $0 }
    if !handles.isEmpty {
      // Not shut down: do not leave MHD threads calling into a freed core, nor the acceptor
      // handing connections to stopped daemons.
      acceptor.withLock { $0 }?.stop()
      _ = core.resumeAllSuspended()
      for handle in handles { MHD_stop_daemon(handle.pointer) }
    }
    core.connections.stop()
  }

  /// Raises the soft RLIMIT_NOFILE so `connections` sockets (plus the process's other files) fit;
  /// the common default of 1,024 would make accept fail far below the connection limit.
  private static func raiseDescriptorLimit(toFit connections: Int, logger: Logger) {
    var limit = rlimit()
    guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0 else { return }
    let wanted = rlim_t(connections + 1024)
    guard limit.rlim_cur < wanted else { return }
    limit.rlim_cur = min(wanted, limit.rlim_max)
    setrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
    if limit.rlim_cur < wanted {
      logger.warning(
        "the descriptor limit is below the connection limit",
        ["http.nofile": String(limit.rlim_cur), "http.connection_limit": String(connections)])
    }
  }
}
