import Synchronization

/// Wakes one waiting task; a wake with nobody waiting is remembered until the next wait.
///
/// Lets the relay sleep until a commit (or a timeout) without polling every few milliseconds.
public final class WakeSignal: Sendable {
  private struct State {
    var pending = false
    var waiter: CheckedContinuation<Void, Never>?
  }

  private let state = Mutex(State())

  public init() {}

  public func notify() {
    let waiter = state.withLock { state -> CheckedContinuation<Void, Never>? in
      guard let waiter = state.waiter else {
        state.pending = true
        return nil
      }
      state.waiter = nil
      return waiter
    }
    waiter?.resume()
  }

  /// Returns on `notify`, after `timeout`, or on cancellation, whichever comes first.
  public func wait(timeout: Duration) async {
    await withTaskGroup(of: Void.self) { group in
      group.addTask { await self.wait() }
      group.addTask { try? await Task.sleep(for: timeout) }
      await group.next()
      group.cancelAll()
    }
  }

  /// Returns on `notify` or cancellation.
  private func wait() async {
    await withTaskCancellationHandler {
      await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
        let resumeNow = state.withLock { state -> Bool in
          if state.pending || Task.isCancelled {
            state.pending = false
            return true
          }
          state.waiter = continuation
          return false
        }
        if resumeNow { continuation.resume() }
      }
    } onCancel: {
      let waiter = state.withLock { state -> CheckedContinuation<Void, Never>? in
        defer { state.waiter = nil }
        return state.waiter
      }
      waiter?.resume()
    }
  }
}
