import Synchronization

/// A one-shot end that background work reports and any task can await: how a part's `run()`
/// learns that its loop, thread or daemon is over, without polling a flag.
///
/// The first `finish` wins; later ones are ignored. A waiting task that is cancelled stops
/// waiting with `CancellationError`, so a race between several ends never leaves a waiter behind.
public final class Completion: Sendable {
  private struct State {
    var result: Result<Void, any Error>?
    var waiters: [Int: CheckedContinuation<Void, any Error>] = [:]
    /// Waiters cancelled before they registered.
    var cancelled: Set<Int> = []
    var nextID = 0
  }

  private let state = Mutex(State())

  public init() {}

  /// Whether `finish` was called.
  public var isFinished: Bool { state.withLock { $0.result != nil } }

  /// Ends it: with `error`, waiters throw it; without, they return.
  public func finish(throwing error: (any Error)? = nil) {
    let result: Result<Void, any Error> = error.map { .failure($0) } ?? .success(())
    let waiters = state.withLock { state -> [CheckedContinuation<Void, any Error>] in
      guard state.result == nil else { return [] }
      state.result = result
      defer {
        state.waiters = [:]
        state.cancelled = []
      }
      return Array(state.waiters.values)
    }
    for waiter in waiters { waiter.resume(with: result) }
  }

  /// Returns when it is finished (or throws its error); throws `CancellationError` if the
  /// waiting task is cancelled first.
  public func wait() async throws {
    let id = state.withLock { state in
      defer { state.nextID += 1 }
      return state.nextID
    }
    try await withTaskCancellationHandler {
      try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
        let now = state.withLock { state -> Result<Void, any Error>? in
          if let result = state.result { return result }
          if state.cancelled.remove(id) != nil { return .failure(CancellationError()) }
          state.waiters[id] = continuation
          return nil
        }
        if let now { continuation.resume(with: now) }
      }
    } onCancel: {
      let waiter = state.withLock { state -> CheckedContinuation<Void, any Error>? in
        guard state.result == nil else { return nil }
        if let waiter = state.waiters.removeValue(forKey: id) { return waiter }
        state.cancelled.insert(id)
        return nil
      }
      waiter?.resume(throwing: CancellationError())
    }
  }

  /// Returns (or throws) as soon as the first of `completions` is finished.
  public static func first(of completions: [Completion]) async throws {
    try await withThrowingTaskGroup(of: Void.self) { group in
      for completion in completions { group.addTask { try await completion.wait() } }
      defer { group.cancelAll() }
      try await group.next()
    }
  }
}
