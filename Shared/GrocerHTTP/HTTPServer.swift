import CMicroHTTPD
import Foundation
import GrocerCore
import Synchronization

/// Why the HTTP server could not start.
public enum HTTPServerError: Error, Sendable {
  case invalidHost(String)
  case startFailed(host: String, port: Int)
}

/// The libmicrohttpd adapter: serves an `HTTPResponder` over HTTP/1.1.
///
/// MHD runs in poll mode (its epoll mode stalls at some connection counts, see PLATFORM.md):
/// `threadPoolSize` daemons of one thread each, all listening on the port with SO_REUSEPORT, so
/// the kernel spreads connections evenly over the threads. MHD's own thread pool shares one
/// listening socket and whichever thread wakes first accepts: at 64 connections one of four
/// threads got none and the others 154/228/243 units of CPU, and the busiest set the tail. A request the responder can answer synchronously is answered inside MHD's
/// callback; otherwise the connection is suspended, `respond` runs in a Task and the connection
/// is resumed with its answer, so no MHD thread ever waits on Swift work.
///
/// `shutdown` stops accepting, waits (bounded) for async handlers in flight, answers any still
/// running with 503, then stops the daemon: MHD aborts if a connection is still suspended.
public final class HTTPServer: LifecycleService {
  public let name = "http"
  public let configuration: HTTPServerConfiguration
  private let core: ServerCore
  private let daemons = Mutex<[DaemonHandle]>([])
  private let boundPort = Atomic<Int>(0)

  public init(configuration: HTTPServerConfiguration, responder: any HTTPResponder, logger: Logger) {
    self.configuration = configuration
    let connections = ConnectionGuard(
      requestTimeoutSeconds: configuration.connectionTimeoutSeconds, limit: configuration.connectionLimit)
    self.core = ServerCore(
      responder: responder, logger: logger, maxBodyBytes: configuration.maxBodyBytes, connections: connections
    )
  }

  /// The port the server is bound to (the ephemeral one when configured with 0); 0 before start.
  public var port: Int { boundPort.load(ordering: .acquiring) }

  /// TCP connections open now.
  public var openConnections: Int { core.connections.open }
  /// Connections closed for not delivering a request within the connection timeout, since start.
  public var timedOutConnections: Int { core.connections.timedOut }
  /// Idle connections closed (or new ones refused) at the connection limit, since start.
  public var shedConnections: Int { core.connections.shed }

  public func start() async throws {
    let config = configuration
    let cls = Unmanaged.passUnretained(core).toOpaque()
    // MHD's own limit sits above ours: the guard sheds idle connections at `connectionLimit`, and
    // those close a moment later on MHD's threads. At MHD's limit new clients would wait in the
    // listen backlog. The guard counts across all daemons; each daemon may hold them all.
    let hardLimit = config.connectionLimit + max(64, config.connectionLimit / 8)
    Self.raiseDescriptorLimit(toFit: hardLimit, logger: core.logger)
    var started: [DaemonHandle] = []
    var port = config.port
    for _ in 0..<config.threadPoolSize {
      guard let daemon = try Self.startDaemon(config, port: port, limit: hardLimit, cls: cls) else {
        for handle in started { MHD_stop_daemon(handle.pointer) }
        throw HTTPServerError.startFailed(host: config.host, port: port)
      }
      started.append(DaemonHandle(pointer: daemon))
      // The others share the port the first one got (the ephemeral one when asked for 0).
      port = Int(grocer_mhd_bound_port(daemon))
    }
    daemons.withLock { $0 = started }
    core.connections.start()
    boundPort.store(port, ordering: .releasing)
    core.logger.notice(
      "http server listening",
      ["http.host": config.host, "http.port": String(port), "http.threads": String(config.threadPoolSize)])
  }

  /// One daemon with one poll thread, listening on `port` with SO_REUSEPORT.
  private static func startDaemon(
    _ config: HTTPServerConfiguration, port: Int, limit: Int, cls: UnsafeMutableRawPointer
  ) throws -> OpaquePointer? {
    var flags = MHD_USE_POLL_INTERNAL_THREAD.rawValue | MHD_ALLOW_SUSPEND_RESUME.rawValue
    var options: [MHD_OptionItem] = [
      .init(option: .CONNECTION_LIMIT, value: limit, ptr_value: nil),
      .init(option: .CONNECTION_TIMEOUT, value: config.connectionTimeoutSeconds, ptr_value: nil),
      .init(option: .CONNECTION_MEMORY_LIMIT, value: config.connectionMemoryLimit, ptr_value: nil),
      .init(option: .STRICT_FOR_CLIENT, value: 1, ptr_value: nil),
      .init(option: .LISTENING_ADDRESS_REUSE, value: 1, ptr_value: nil),
    ]
    /// Starts the daemon bound to the socket address in `pointer` (IPv4 or IPv6).
    func start(_ pointer: UnsafeMutableRawPointer) -> OpaquePointer? {
      options.append(.init(option: .SOCK_ADDR, value: 0, ptr_value: pointer))
      options.append(.init(option: .END, value: 0, ptr_value: nil))
      return grocer_mhd_start_daemon(
        flags, UInt16(port), grocerAccessHandler, cls, grocerRequestCompleted, grocerURILog,
        grocerNotifyConnection, options)
    }
    if config.host.contains(":") {
      flags |= MHD_USE_IPv6.rawValue
      var address = sockaddr_in6()
      address.sin6_family = sa_family_t(AF_INET6)
      address.sin6_port = in_port_t(UInt16(port).bigEndian)
      guard inet_pton(AF_INET6, config.host, &address.sin6_addr) == 1 else {
        throw HTTPServerError.invalidHost(config.host)
      }
      return withUnsafeMutablePointer(to: &address) { start(UnsafeMutableRawPointer($0)) }
    }
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_port = in_port_t(UInt16(port).bigEndian)
    guard inet_pton(AF_INET, config.host, &address.sin_addr) == 1 else {
      throw HTTPServerError.invalidHost(config.host)
    }
    return withUnsafeMutablePointer(to: &address) { start(UnsafeMutableRawPointer($0)) }
  }

  public func shutdown() async {
    let handles = daemons.withLock { $0 }
    guard !handles.isEmpty else { return }
    let listeners = handles.map { MHD_quiesce_daemon($0.pointer) }
    let deadline = ContinuousClock.now + configuration.shutdownGracePeriod
    while core.asyncInFlight > 0 && ContinuousClock.now < deadline {
      try? await Task.sleep(for: .milliseconds(10))
    }
    let forced = core.resumeAllSuspended()
    if forced > 0 {
      core.logger.warning(
        "answered unfinished requests with 503 at shutdown", ["http.requests": String(forced)])
      let drainDeadline = ContinuousClock.now + .seconds(1)
      while core.asyncInFlight > 0 && ContinuousClock.now < drainDeadline {
        try? await Task.sleep(for: .milliseconds(10))
      }
    }
    daemons.withLock { $0 = [] }
    for handle in handles { MHD_stop_daemon(handle.pointer) }
    core.connections.stop()
    for listener in listeners where listener >= 0 { close(listener) }
    boundPort.store(0, ordering: .releasing)
    core.logger.notice("http server stopped")
  }

  deinit {
    let handles = daemons.withLock { $0 }
    if !handles.isEmpty {
      // Not shut down: do not leave MHD threads calling into a freed core.
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

/// The daemon pointer, owned by `HTTPServer` and only used under its lock.
struct DaemonHandle: @unchecked Sendable {
  let pointer: OpaquePointer
}
