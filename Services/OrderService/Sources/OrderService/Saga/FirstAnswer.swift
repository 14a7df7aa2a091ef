import GrocerCore
import Synchronization

/// A continuation resumed by whichever answer comes first; later ones are dropped.
final class FirstAnswer<T: Sendable>: Sendable {
  private let continuation = Mutex<CheckedContinuation<T, Never>?>(nil)

  func wait(_ continuation: CheckedContinuation<T, Never>) {
    self.continuation.withLock { $0 = continuation }
  }

  /// True if this was the first answer.
  @discardableResult
  func give(_ value: T) -> Bool {
    guard let waiting = continuation.withLock({ $0.take() }) else { return false }
    waiting.resume(returning: value)
    return true
  }
}

/// `work`'s value if it comes within `limit`, else nil. Past the limit `work` is cancelled when
/// `cancellingLate` (it may stop, or ignore it and finish on its own), else left to go on.
///
/// The limit is a `Deadlines` entry, not a sleeping task: one runs per checkout (and one per
/// payment call), and a `Task.sleep` kept a Dispatch timer armed until its deadline even when
/// the work had answered in milliseconds.
func answer<T: Sendable>(
  within limit: Duration, cancellingLate: Bool, _ work: @escaping @Sendable () async -> T
) async -> T? {
  let answer = FirstAnswer<T?>()
  // The running work, and whether the limit passed before it was known.
  let late = Mutex<(work: Task<Void, Never>?, timedOut: Bool)>((nil, false))
  return await withCheckedContinuation { continuation in
    answer.wait(continuation)
    let deadline = Deadlines.shared.schedule(after: limit) {
      guard answer.give(nil), cancellingLate else { return }
      late.withLock { late -> Task<Void, Never>? in
        late.timedOut = true
        return late.work
      }?.cancel()
    }
    let running = Task {
      answer.give(await work())
      Deadlines.shared.cancel(deadline)
    }
    if late.withLock({ late -> Bool in
      late.work = running
      return late.timedOut
    }) {
      running.cancel()
    }
  }
}
