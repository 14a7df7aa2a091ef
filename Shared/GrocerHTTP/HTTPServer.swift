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
/// MHD runs in poll mode with a thread pool (its epoll mode stalls at some connection counts,
/// see PLATFORM.md). A request the responder can answer synchronously is answered inside MHD's
/// callback; otherwise the connection is suspended, `respond` runs in a Task and the connection
/// is resumed with its answer, so no MHD thread ever waits on Swift work.
///
/// `shutdown` stops accepting, waits (bounded) for async handlers in flight, answers any still
/// running with 503, then stops the daemon: MHD aborts if a connection is still suspended.
public final class HTTPServer: LifecycleService {
  public let name = "http"
  public let configuration: HTTPServerConfiguration
  private let core: ServerCore
  private let daemon = Mutex<DaemonHandle?>(nil)
  private let boundPort = Atomic<Int>(0)

  public init(configuration: HTTPServerConfiguration, responder: any HTTPResponder, logger: Logger) {
    self.configuration = configuration
    self.core = ServerCore(responder: responder, logger: logger, maxBodyBytes: configuration.maxBodyBytes)
  }

  /// The port the server is bound to (the ephemeral one when configured with 0); 0 before start.
  public var port: Int { boundPort.load(ordering: .acquiring) }

  public func start() async throws {
    let config = configuration
    var flags = MHD_USE_POLL_INTERNAL_THREAD.rawValue | MHD_ALLOW_SUSPEND_RESUME.rawValue
    let cls = Unmanaged.passUnretained(core).toOpaque()
    var options: [MHD_OptionItem] = [
      .init(option: .THREAD_POOL_SIZE, value: config.threadPoolSize, ptr_value: nil),
      .init(option: .CONNECTION_LIMIT, value: config.connectionLimit, ptr_value: nil),
      .init(option: .CONNECTION_TIMEOUT, value: config.idleTimeoutSeconds, ptr_value: nil),
      .init(option: .CONNECTION_MEMORY_LIMIT, value: config.connectionMemoryLimit, ptr_value: nil),
      .init(option: .STRICT_FOR_CLIENT, value: 1, ptr_value: nil),
      .init(option: .LISTENING_ADDRESS_REUSE, value: 1, ptr_value: nil),
    ]
    /// Starts the daemon bound to the socket address in `pointer` (IPv4 or IPv6).
    func startDaemon(_ pointer: UnsafeMutableRawPointer) -> OpaquePointer? {
      options.append(.init(option: .SOCK_ADDR, value: 0, ptr_value: pointer))
      options.append(.init(option: .END, value: 0, ptr_value: nil))
      return grocer_mhd_start_daemon(
        flags, UInt16(config.port), grocerAccessHandler, cls, grocerRequestCompleted, grocerURILog, options)
    }
    let started: OpaquePointer?
    if config.host.contains(":") {
      flags |= MHD_USE_IPv6.rawValue
      var address = sockaddr_in6()
      address.sin6_family = sa_family_t(AF_INET6)
      address.sin6_port = in_port_t(UInt16(config.port).bigEndian)
      guard inet_pton(AF_INET6, config.host, &address.sin6_addr) == 1 else {
        throw HTTPServerError.invalidHost(config.host)
      }
      started = withUnsafeMutablePointer(to: &address) { startDaemon(UnsafeMutableRawPointer($0)) }
    } else {
      var address = sockaddr_in()
      address.sin_family = sa_family_t(AF_INET)
      address.sin_port = in_port_t(UInt16(config.port).bigEndian)
      guard inet_pton(AF_INET, config.host, &address.sin_addr) == 1 else {
        throw HTTPServerError.invalidHost(config.host)
      }
      started = withUnsafeMutablePointer(to: &address) { startDaemon(UnsafeMutableRawPointer($0)) }
    }
    guard let started else {
      throw HTTPServerError.startFailed(host: config.host, port: config.port)
    }
    daemon.withLock { $0 = DaemonHandle(pointer: started) }
    let port = Int(grocer_mhd_bound_port(started))
    boundPort.store(port, ordering: .releasing)
    core.logger.notice(
      "http server listening",
      ["http.host": config.host, "http.port": String(port), "http.threads": String(config.threadPoolSize)])
  }

  public func shutdown() async {
    guard let handle = daemon.withLock({ $0 }) else { return }
    let listener = MHD_quiesce_daemon(handle.pointer)
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
    daemon.withLock { $0 = nil }
    MHD_stop_daemon(handle.pointer)
    if listener >= 0 { close(listener) }
    boundPort.store(0, ordering: .releasing)
    core.logger.notice("http server stopped")
  }

  deinit {
    if let handle = daemon.withLock({ $0 }) {
      // Not shut down: do not leave MHD threads calling into a freed core.
      _ = core.resumeAllSuspended()
      MHD_stop_daemon(handle.pointer)
    }
  }
}

/// The daemon pointer, owned by `HTTPServer` and only used under its lock.
struct DaemonHandle: @unchecked Sendable {
  let pointer: OpaquePointer
}
