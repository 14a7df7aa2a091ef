import Foundation
import Synchronization

#if canImport(Glibc)
  import Glibc
#endif

/// A TCP forwarder between a client and the broker that can stop forwarding, to play a broker
/// that hangs without closing its sockets (the case only heartbeats detect). Runs on its own
/// thread; `stop()` ends it.
final class FreezableProxy: Sendable {
  let port: Int
  private let listener: Int32
  private let frozen = Atomic<Bool>(false)
  private let stopped = Atomic<Bool>(false)
  private let done = Mutex<CheckedContinuation<Void, Never>?>(nil)
  private let finished = Atomic<Bool>(false)
  private let upstreamPort: Int

  init(upstreamPort: Int = 5672) throws {
    self.upstreamPort = upstreamPort
    let listener = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    address.sin_port = 0
    let bound = withUnsafePointer(to: &address) {
      $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
        bind(listener, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
      }
    }
    guard bound == 0, listen(listener, 16) == 0 else { throw POSIXError(.EADDRINUSE) }
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    _ = withUnsafeMutablePointer(to: &address) {
      $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(listener, $0, &length) }
    }
    self.listener = listener
    port = Int(UInt16(bigEndian: address.sin_port))
    Thread { [self] in self.run() }.start()
  }

  /// Stops forwarding bytes in both directions (connections stay open).
  func freeze() { frozen.store(true, ordering: .releasing) }

  /// Drops every proxied connection and forwards again for new ones.
  func thaw() { frozen.store(false, ordering: .releasing) }

  func stop() async {
    stopped.store(true, ordering: .releasing)
    while !finished.load(ordering: .acquiring) { try? await Task.sleep(for: .milliseconds(10)) }
  }

  private func connectUpstream() -> Int32 {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    address.sin_port = in_port_t(UInt16(upstreamPort).bigEndian)
    let result = withUnsafePointer(to: &address) {
      $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
        connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
      }
    }
    if result != 0 {
      close(fd)
      return -1
    }
    return fd
  }

  private func run() {
    var pairs: [(Int32, Int32)] = []
    var wasFrozen = false
    var buffer = [UInt8](repeating: 0, count: 65536)
    while !stopped.load(ordering: .acquiring) {
      let isFrozen = frozen.load(ordering: .acquiring)
      if wasFrozen && !isFrozen {
        for (a, b) in pairs { close(a); close(b) }
        pairs = []
      }
      wasFrozen = isFrozen
      var fds = [pollfd(fd: listener, events: Int16(POLLIN), revents: 0)]
      if !isFrozen {
        for (a, b) in pairs {
          fds.append(pollfd(fd: a, events: Int16(POLLIN), revents: 0))
          fds.append(pollfd(fd: b, events: Int16(POLLIN), revents: 0))
        }
      }
      _ = poll(&fds, nfds_t(fds.count), 20)
      if fds[0].revents != 0 {
        let client = accept(listener, nil, nil)
        let upstream = connectUpstream()
        if client >= 0 && upstream >= 0 {
          pairs.append((client, upstream))
        } else {
          if client >= 0 { close(client) }
          if upstream >= 0 { close(upstream) }
        }
      }
      guard !isFrozen else { continue }
      var broken: Set<Int32> = []
      for entry in fds.dropFirst() where entry.revents != 0 {
        guard let pair = pairs.first(where: { $0.0 == entry.fd || $0.1 == entry.fd }) else { continue }
        let target = pair.0 == entry.fd ? pair.1 : pair.0
        let count = read(entry.fd, &buffer, buffer.count)
        if count <= 0 || write(target, buffer, count) != count { broken.insert(pair.0) }
      }
      for fd in broken {
        if let index = pairs.firstIndex(where: { $0.0 == fd }) {
          close(pairs[index].0)
          close(pairs[index].1)
          pairs.remove(at: index)
        }
      }
    }
    for (a, b) in pairs { close(a); close(b) }
    close(listener)
    finished.store(true, ordering: .releasing)
  }
}
