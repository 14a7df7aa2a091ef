import CMicroHTTPD
import Foundation
import GrocerCore
import GrocerFastPath
import GrocerHTTP
import Synchronization

/// One TCP connection as `ConnectionGuard` sees it. MHD keeps a retained reference in the
/// connection's socket context from `MHD_CONNECTION_NOTIFY_STARTED` to `..._CLOSED`.
final class ConnectionState: Sendable {
  /// The socket; only shut down (never closed) by the guard, and only under its lock, which the
  /// close notification also takes before MHD closes the descriptor: no reused number is hit.
  let fd: Int32
  /// Accept order: the oldest idle connection is shed first.
  let sequence: Int
  /// Monotonic nanoseconds by which the request being read (line, headers and body) must be
  /// complete; 0 while none is being read (a handler runs or the response is being sent).
  let deadline: Atomic<Int64>
  /// Set once the guard has shut the socket down, so it is not picked twice.
  let dropped = Atomic<Bool>(false)

  init(fd: Int32, sequence: Int, deadline: Int64) {
    self.fd = fd
    self.sequence = sequence
    self.deadline = Atomic(deadline)
  }
}

/// Bounds what one connection may take where libmicrohttpd does not: the time to deliver a
/// request, and the number of connections held.
///
/// MHD's own timeout restarts on every byte, so a client sending one byte a second (slowloris)
/// held its connection forever. Here every request must be read in full (request line, headers,
/// body) within `requestTimeout` of the connection being accepted or of its previous response
/// being sent; a watchdog thread shuts down the sockets that miss it. Time spent in a handler or
/// sending a response does not count.
///
/// At MHD's connection limit honest clients waited in the listen backlog until some idle
/// connection timed out. Here, past `limit` connections, the oldest connection waiting for a
/// request is shut down to make room (as nginx reuses its idle keep-alive connections), so a
/// flood of idle connections cannot lock honest clients out; only when every connection is busy
/// is the new one refused.
final class ConnectionGuard: Sendable {
  private struct Registry {
    /// Open connections in accept order (by `sequence`).
    var connections: [ConnectionState] = []
    var nextSequence = 0
    /// Connections shut down by the guard whose close MHD has not reported yet.
    var dropping = 0
    var stopped = false
  }

  let requestTimeoutNanos: Int64
  let limit: Int
  private let registry = Mutex(Registry())
  private let openCount = Atomic<Int>(0)
  private let timedOutCount = Atomic<Int>(0)
  private let shedCount = Atomic<Int>(0)
  private let stopRequested = Atomic<Bool>(false)

  init(requestTimeoutSeconds: Int, limit: Int) {
    self.requestTimeoutNanos = Int64(max(1, requestTimeoutSeconds)) * 1_000_000_000
    self.limit = max(1, limit)
  }

  /// Monotonic clock in nanoseconds, to the kernel's tick (a few ms): deadlines are seconds long,
  /// and this is read once per request, where the coarse clock costs a fraction of the fine one.
  static func now() -> Int64 { Int64(MonotonicInstant.coarseNow.nanoseconds) }

  /// Connections open now.
  var open: Int { openCount.load(ordering: .relaxed) }
  /// Connections shut down for missing their request deadline, since start.
  var timedOut: Int { timedOutCount.load(ordering: .relaxed) }
  /// Idle connections shut down to make room at the limit (or new ones refused), since start.
  var shed: Int { shedCount.load(ordering: .relaxed) }

  /// A connection was accepted: registers it with a deadline for its first request, and makes
  /// room if the limit is passed.
  func opened(fd: Int32) -> ConnectionState {
    registry.withLock { registry in
      let state = ConnectionState(
        fd: fd, sequence: registry.nextSequence, deadline: Self.now() + requestTimeoutNanos)
      registry.nextSequence += 1
      registry.connections.append(state)
      openCount.store(registry.connections.count, ordering: .relaxed)
      if registry.connections.count - registry.dropping > limit && !registry.stopped {
        // The oldest connection waiting for a request; the new one itself if none is.
        let victim =
          registry.connections.first {
            $0 !== state && $0.deadline.load(ordering: .relaxed) != 0 && !$0.dropped.load(ordering: .relaxed)
          } ?? state
        drop(victim, counter: shedCount, &registry)
      }
      return state
    }
  }

  /// MHD is about to close the connection (it closes the descriptor after this returns).
  func closed(_ state: ConnectionState) {
    registry.withLock { registry in
      // Accept order is sequence order: binary search.
      var low = 0
      var high = registry.connections.count
      while low < high {
        let middle = (low + high) / 2
        if registry.connections[middle].sequence < state.sequence { low = middle + 1 } else { high = middle }
      }
      if low < registry.connections.count && registry.connections[low] === state {
        registry.connections.remove(at: low)
      }
      if state.dropped.load(ordering: .relaxed) { registry.dropping -= 1 }
      openCount.store(registry.connections.count, ordering: .relaxed)
    }
  }

  /// The request on `state` has been read in full: the handler's time does not count.
  func requestRead(_ state: ConnectionState?) {
    state?.deadline.store(0, ordering: .relaxed)
  }

  /// The response was sent (or the request ended): the next request has `requestTimeout`.
  func awaitNextRequest(_ state: ConnectionState?) {
    state?.deadline.store(Self.now() + requestTimeoutNanos, ordering: .relaxed)
  }

  /// Starts the watchdog thread, which checks deadlines a few times per timeout.
  func start() {
    stopRequested.store(false, ordering: .releasing)
    registry.withLock { $0.stopped = false }
    let interval = min(1.0, max(0.05, Double(requestTimeoutNanos) / 4e9))
    let thread = Thread { [self] in
      while !stopRequested.load(ordering: .acquiring) {
        Thread.sleep(forTimeInterval: interval)
        sweep()
      }
    }
    thread.name = "grocer-http-watchdog"
    thread.start()
  }

  /// Shuts down every connection past its deadline.
  func sweep() {
    let now = Self.now()
    registry.withLock { registry in
      guard !registry.stopped else { return }
      for state in registry.connections {
        let deadline = state.deadline.load(ordering: .relaxed)
        if deadline != 0 && deadline < now && !state.dropped.load(ordering: .relaxed) {
          drop(state, counter: timedOutCount, &registry)
        }
      }
    }
  }

  /// Stops the watchdog and forgets every connection (call once MHD has stopped: their
  /// descriptors are closed and their numbers may be reused).
  func stop() {
    stopRequested.store(true, ordering: .releasing)
    registry.withLock { registry in
      registry.stopped = true
      registry.connections.removeAll()
      registry.dropping = 0
    }
    openCount.store(0, ordering: .relaxed)
  }

  /// Shuts the socket down (under the registry lock); MHD sees EOF and closes it.
  private func drop(_ state: ConnectionState, counter: borrowing Atomic<Int>, _ registry: inout Registry) {
    state.dropped.store(true, ordering: .relaxed)
    registry.dropping += 1
    counter.add(1, ordering: .relaxed)
    shutdown(state.fd, Int32(SHUT_RDWR))
  }
}
