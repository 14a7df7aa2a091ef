import Synchronization

/// A response body written while it is being sent (server-sent events): the producer `write`s
/// and at last `finish`es; the transport reads what is there, and when nothing is, parks the
/// connection until the next write wakes it, so an idle stream costs no thread and no polling.
///
/// The transport calls `cancel` when the connection ends (the client went away, the server
/// stops): `write` then returns false and `onCancel` runs once, so the producer forgets it.
public final class HTTPBodyStream: Sendable, Equatable {
  private struct State {
    var pending: [UInt8] = []
    var finished = false
    var cancelled = false
    /// The transport parked the connection and waits to be woken.
    var parked = false
    var wake: (@Sendable () -> Void)?
    var onCancel: (@Sendable () -> Void)?
  }

  private let state = Mutex(State())
  /// Past this much unsent data the client is not keeping up: the stream is cancelled.
  public let maximumPending: Int

  public init(maximumPending: Int = 256 * 1024) { self.maximumPending = maximumPending }

  public static func == (lhs: HTTPBodyStream, rhs: HTTPBodyStream) -> Bool { lhs === rhs }

  /// Runs `action` once when the stream is cancelled (at once if it already was).
  public func onCancel(_ action: @escaping @Sendable () -> Void) {
    let now = state.withLock { state -> Bool in
      if state.cancelled { return true }
      state.onCancel = action
      return false
    }
    if now { action() }
  }

  /// Queues `bytes` to be sent; false (and nothing queued) once the stream is finished or
  /// cancelled, or when the client has fallen too far behind (then it is cancelled).
  @discardableResult
  public func write(_ bytes: [UInt8]) -> Bool {
    var tooFar = false
    let wake = state.withLock { state -> (@Sendable () -> Void)? in
      guard !state.finished, !state.cancelled else { return nil }
      if state.pending.count + bytes.count > maximumPending {
        tooFar = true
        return nil
      }
      state.pending.append(contentsOf: bytes)
      return takeWake(&state)
    }
    if tooFar {
      cancel()
      return false
    }
    wake?()
    return !isClosed
  }

  /// No more writes: the transport ends the body once what is queued is sent.
  public func finish() {
    let wake = state.withLock { state -> (@Sendable () -> Void)? in
      guard !state.finished else { return nil }
      state.finished = true
      return takeWake(&state)
    }
    wake?()
  }

  /// Finished or cancelled.
  public var isClosed: Bool { state.withLock { $0.finished || $0.cancelled } }

  // MARK: - The transport's side

  /// What `read` found.
  public enum Read: Equatable, Sendable {
    /// This many bytes were copied.
    case bytes(Int)
    /// Nothing now: `park` was called under the stream's lock, and `wake` will be called once
    /// when there is something (a write, the finish, a cancel).
    case parked
    /// Everything was sent and the stream is finished (or cancelled).
    case end
  }

  /// Copies up to `buffer.count` queued bytes; with none, calls `park` (which must only mark the
  /// connection as suspended, without waiting) and remembers `wake` for the next write.
  public func read(
    into buffer: UnsafeMutableRawBufferPointer, park: () -> Void, wake: @escaping @Sendable () -> Void
  ) -> Read {
    state.withLock { state in
      if state.cancelled { return .end }
      if !state.pending.isEmpty {
        let count = min(buffer.count, state.pending.count)
        state.pending.withUnsafeBytes { source in
          buffer.baseAddress!.copyMemory(from: source.baseAddress!, byteCount: count)
        }
        state.pending.removeFirst(count)
        return .bytes(count)
      }
      if state.finished { return .end }
      state.parked = true
      state.wake = wake
      park()
      return .parked
    }
  }

  /// The connection ended (or the server stops): nothing more is sent; a parked connection is
  /// woken so the transport can let it go.
  public func cancel() {
    let (wake, onCancel) = state.withLock { state -> ((@Sendable () -> Void)?, (@Sendable () -> Void)?) in
      guard !state.cancelled else { return (nil, nil) }
      state.cancelled = true
      state.pending = []
      let onCancel = state.onCancel
      state.onCancel = nil
      return (takeWake(&state), onCancel)
    }
    wake?()
    onCancel?()
  }

  /// The waker of a parked connection, taken so it is called once.
  private func takeWake(_ state: inout State) -> (@Sendable () -> Void)? {
    guard state.parked else { return nil }
    state.parked = false
    defer { state.wake = nil }
    return state.wake
  }
}
