import GrocerCore
import GrocerRuntime
import Synchronization

/// Wakes one waiting task; a wake with nobody waiting is remembered until the next wait.
///
/// Lets the relay sleep until a commit (or a timeout) without polling every few milliseconds.
/// The timeout is a `Deadlines` entry: a relay that waits hundreds of times a second made a
/// task group, two child tasks and a Dispatch timer for each wait.
public final class WakeSignal: Sendable {
  private struct State {
    var pending = false
    var waiter: CheckedContinuation<Void, Never>?
    /// Counts waits, so a late timeout or cancellation cannot end the next one.
    var wait: UInt64 = 0
    var deadline: Deadlines.Token?
  }

  private let state = Mutex(State())

  public init() {}

  public func notify() {
    let (waiter, deadline) = state.withLock {
      state -> (CheckedContinuation<Void, Never>?, Deadlines.Token?) in
      guard let waiter = state.waiter else {
        state.pending = true
        return (nil, nil)
      }
      state.waiter = nil
      defer { state.deadline = nil }
      return (waiter, state.deadline)
    }
    if let deadline { Deadlines.shared.cancel(deadline) }
    waiter?.resume()
  }

  /// Forgets a wake nobody waited for: the caller is about to look for what it announced.
  public func clear() {
    state.withLock { $0.pending = false }
  }

  /// Returns on `notify`, after `timeout`, or on cancellation, whichever comes first.
  public func wait(timeout: Duration) async {
    let number = state.withLock { state -> UInt64 in
      state.wait += 1
      return state.wait
    }
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
        if resumeNow {
          continuation.resume()
          return
        }
        let deadline = Deadlines.shared.schedule(after: timeout) { [self] in end(number) }
        let stillWaiting = state.withLock { state -> Bool in
          guard state.wait == number, state.waiter != nil else { return false }
          state.deadline = deadline
          return true
        }
        if !stillWaiting { Deadlines.shared.cancel(deadline) }
      }
    } onCancel: {
      end(number)
    }
  }

  /// Ends wait `number` if it is still waiting (its timeout, or its task's cancellation).
  private func end(_ number: UInt64) {
    let (waiter, deadline) = state.withLock {
      state -> (CheckedContinuation<Void, Never>?, Deadlines.Token?) in
      guard state.wait == number, let waiter = state.waiter else { return (nil, nil) }
      state.waiter = nil
      defer { state.deadline = nil }
      return (waiter, state.deadline)
    }
    if let deadline { Deadlines.shared.cancel(deadline) }
    waiter?.resume()
  }
}
