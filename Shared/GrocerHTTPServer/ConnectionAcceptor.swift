import CMicroHTTPD
import Foundation
import GrocerCore
import GrocerHTTP
import GrocerRuntime
import Synchronization

/// The daemon pointer, owned by `HTTPServer`; MHD's functions on it are thread-safe.
struct DaemonHandle: @unchecked Sendable {
  let pointer: OpaquePointer
}

/// How many connections each daemon holds, so a new one goes to the daemon holding the fewest:
/// a daemon's thread with more connections than the others serves each of them less often.
final class DaemonLoad: Sendable {
  private struct Entry {
    let daemon: DaemonHandle
    var open: Int
  }

  private let entries = Mutex<[Entry]>([])

  func assign(_ daemons: [DaemonHandle]) {
    entries.withLock { $0 = daemons.map { Entry(daemon: $0, open: 0) } }
  }

  /// The daemon with the fewest connections (the first of equals), counting the new one in.
  func pick() -> DaemonHandle? {
    entries.withLock { entries in
      guard var best = entries.indices.first else { return nil }
      for index in entries.indices where entries[index].open < entries[best].open { best = index }
      entries[best].open += 1
      return entries[best].daemon
    }
  }

  /// A connection counted by `pick` closed (or was never added).
  func release(_ daemon: OpaquePointer?) {
    guard let daemon else { return }
    entries.withLock { entries in
      if let index = entries.firstIndex(where: { $0.daemon.pointer == daemon }), entries[index].open > 0 {
        entries[index].open -= 1
      }
    }
  }

  /// `daemon`'s place in start order, or nil.
  func index(of daemon: OpaquePointer?) -> Int? {
    entries.withLock { entries in entries.firstIndex { $0.daemon.pointer == daemon } }
  }

  /// Connections held by each daemon, in start order.
  var perDaemon: [Int] { entries.withLock { $0.map(\.open) } }
}

/// Accepts connections on one listening socket on a thread of its own and hands each to the
/// least loaded daemon (`MHD_add_connection`; the daemons have no listening socket of their own).
final class ConnectionAcceptor: Sendable {
  let listener: Int32
  /// The bound port (the ephemeral one when asked for 0).
  let port: Int
  private let load: DaemonLoad
  private let logger: Logger
  private let running = Atomic<Bool>(false)
  private let stopping = Atomic<Bool>(false)
  private let finished = DispatchSemaphore(value: 0)
  /// Finished when the accepting thread has left its loop.
  let ended = Completion()

  /// Binds `host`:`port` (SO_REUSEADDR, IPv6 only for an IPv6 host) and listens.
  init(host: String, port: Int, load: DaemonLoad, logger: Logger) throws(HTTPServerError) {
    guard (0...65535).contains(port) else { throw .startFailed(host: host, port: port) }
    let ipv6 = host.contains(":")
    let fd = socket(ipv6 ? AF_INET6 : AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
    guard fd >= 0 else { throw .startFailed(host: host, port: port) }
    var on: Int32 = 1
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, socklen_t(MemoryLayout<Int32>.size))
    let bound: Int32?
    if ipv6 {
      setsockopt(fd, Int32(IPPROTO_IPV6), IPV6_V6ONLY, &on, socklen_t(MemoryLayout<Int32>.size))
      var address = sockaddr_in6()
      address.sin6_family = sa_family_t(AF_INET6)
      address.sin6_port = in_port_t(UInt16(port).bigEndian)
      bound = inet_pton(AF_INET6, host, &address.sin6_addr) == 1 ? Self.bind(fd, &address) : nil
    } else {
      var address = sockaddr_in()
      address.sin_family = sa_family_t(AF_INET)
      address.sin_port = in_port_t(UInt16(port).bigEndian)
      bound = inet_pton(AF_INET, host, &address.sin_addr) == 1 ? Self.bind(fd, &address) : nil
    }
    guard let bound else {
      close(fd)
      throw .invalidHost(host)
    }
    guard bound == 0, listen(fd, SOMAXCONN) == 0 else {
      close(fd)
      throw .startFailed(host: host, port: port)
    }
    var local = sockaddr_storage()
    var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
    _ = withUnsafeMutablePointer(to: &local) {
      $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
    }
    let portBytes =
      ipv6
      ? withUnsafePointer(to: &local) {
        $0.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { $0.pointee.sin6_port }
      }
      : withUnsafePointer(to: &local) {
        $0.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { $0.pointee.sin_port }
      }
    self.listener = fd
    self.port = Int(UInt16(bigEndian: portBytes))
    self.load = load
    self.logger = logger
  }

  private static func bind<Address>(_ fd: Int32, _ address: inout Address) -> Int32 {
    withUnsafePointer(to: &address) {
      $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
        Glibc.bind(fd, $0, socklen_t(MemoryLayout<Address>.size))
      }
    }
  }

  /// Starts the accepting thread.
  func start() {
    running.store(true, ordering: .releasing)
    let thread = Thread { [self] in
      run()
      ended.finish()
      finished.signal()
    }
    thread.name = "grocer-http-accept"
    thread.start()
  }

  private func run() {
    var lastComplaint = ContinuousClock.now - .seconds(60)
    while !stopping.load(ordering: .acquiring) {
      var address = sockaddr_storage()
      var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
      let client = withUnsafeMutablePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
          grocer_accept(listener, $0, &length)
        }
      }
      if client < 0 {
        let error = errno
        if stopping.load(ordering: .acquiring) { return }
        switch error {
        case EINTR, ECONNABORTED, EAGAIN, EPROTO:
          continue
        default:
          // Out of descriptors or memory: new clients wait in the backlog meanwhile.
          if ContinuousClock.now - lastComplaint > .seconds(10) {
            lastComplaint = .now
            logger.warning("accept failed", ["error": String(cString: strerror(error))])
          }
          usleep(10_000)
          continue
        }
      }
      guard let daemon = load.pick() else {
        close(client)
        continue
      }
      let added: MHD_Result = withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
          MHD_add_connection(daemon.pointer, client, $0, length)
        }
      }
      // MHD closed the socket itself (its connection limit, or no memory).
      if added != .YES { load.release(daemon.pointer) }
    }
  }

  /// Stops accepting and waits for the thread to leave, so no daemon is handed a connection
  /// after this returns; new clients are refused once the socket closes.
  func stop() {
    guard !stopping.exchange(true, ordering: .acquiringAndReleasing) else { return }
    shutdown(listener, Int32(SHUT_RDWR))  // wakes the blocked accept
    if running.load(ordering: .acquiring) { finished.wait() }
    close(listener)
  }
}
