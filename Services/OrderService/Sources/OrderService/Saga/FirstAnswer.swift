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

/// The value handed to `give` if it comes within `limit`, else nil (a later one is dropped).
/// `start` begins the work and must make it call `give` once; `onLate` runs when the limit
/// passes first.
///
/// The limit is a `Deadlines` entry, not a sleeping task: one runs per checkout (and one per
/// payment call), and a `Task.sleep` kept a Dispatch timer armed until its deadline even when
/// the work had answered in milliseconds.
func answer<T: Sendable>(
  within limit: Duration, onLate: (@Sendable () -> Void)? = nil,
  starting start: (_ give: @escaping @Sendable (T) -> Void) -> Void
) async -> T? {
  let answer = FirstAnswer<T?>()
  return await withCheckedContinuation { continuation in
    answer.wait(continuation)
    let deadline = Deadlines.shared.schedule(after: limit) {
      if answer.give(nil) { onLate?() }
    }
    start { value in
      answer.give(value)
      Deadlines.shared.cancel(deadline)
    }
  }
}

/// `work`'s value if it comes within `limit`, else nil. Past the limit `work` is cancelled when
/// `cancellingLate` (it may stop, or ignore it and finish on its own), else left to go on.
func answer<T: Sendable>(
  within limit: Duration, cancellingLate: Bool, _ work: @escaping @Sendable () async -> T
) async -> T? {
  // The running work, and whether the limit passed before it was known.
  let late = Mutex<(work: Task<Void, Never>?, timedOut: Bool)>((nil, false))
  @Sendable func cancelWork() {
    late.withLock { late -> Task<Void, Never>? in
      late.timedOut = true
      return late.work
    }?.cancel()
  }
  return await answer(within: limit, onLate: cancellingLate ? cancelWork : nil) { give in
    let running = Task { give(await work()) }
    if late.withLock({ late -> Bool in
      late.work = running
      return late.timedOut
    }) {
      running.cancel()
    }
  }
}
