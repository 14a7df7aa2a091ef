import GrocerCore
import GrocerRuntime
import Synchronization

/// True for the first caller of `claim` only.
private final class Once: Sendable {
  private let claimed = Atomic(false)

  func claim() -> Bool { !claimed.exchange(true, ordering: .acquiringAndReleasing) }
}

/// Hands `done` the value `start`'s work gives if it comes within `limit`, else `late()`;
/// whichever comes second is dropped. `start` begins the work and must make it call `give` once.
/// `done` runs on the thread that had the first answer (the work's, or `deadlines`' thread).
///
/// The limit is an entry of `deadlines`, not a sleeping task: one runs per checkout (and one per
/// payment call), and a `Task.sleep` keeps a Dispatch timer armed until its deadline even when
/// the work answered long before.
func answer<T: Sendable>(
  within limit: Duration, on deadlines: Deadlines, late: @escaping @Sendable () -> T,
  starting start: (_ give: @escaping @Sendable (T) -> Void) -> Void,
  then done: @escaping @Sendable (T) -> Void
) {
  let once = Once()
  let deadline = deadlines.schedule(after: limit) {
    if once.claim() { done(late()) }
  }
  start { value in
    guard once.claim() else { return }
    deadlines.cancel(deadline)
    done(value)
  }
}

/// The value handed to `give` if it comes within `limit`, else nil (a later one is dropped);
/// `onLate` runs when the limit passes first.
func answer<T: Sendable>(
  within limit: Duration, on deadlines: Deadlines, onLate: (@Sendable () -> Void)? = nil,
  starting start: (_ give: @escaping @Sendable (T) -> Void) -> Void
) async -> T? {
  await withCheckedContinuation { continuation in
    answer(
      within: limit, on: deadlines,
      late: { () -> T? in
        onLate?()
        return nil
      },
      starting: { give in start { give($0) } },
      then: { continuation.resume(returning: $0) })
  }
}

/// `work`'s value if it comes within `limit`, else nil. Past the limit `work` is cancelled when
/// `cancellingLate` (it may stop, or ignore it and finish on its own), else left to go on.
func answer<T: Sendable>(
  within limit: Duration, on deadlines: Deadlines, cancellingLate: Bool,
  _ work: @escaping @Sendable () async -> T
) async -> T? {
  // The running work, and whether the limit passed before it was known.
  let late = Mutex<(work: Task<Void, Never>?, timedOut: Bool)>((nil, false))
  @Sendable func cancelWork() {
    late.withLock { late -> Task<Void, Never>? in
      late.timedOut = true
      return late.work
    }?.cancel()
  }
  return await answer(within: limit, on: deadlines, onLate: cancellingLate ? cancelWork : nil) { give in
    let running = Task { give(await work()) }
    if late.withLock({ late -> Bool in
      late.work = running
      return late.timedOut
    }) {
      running.cancel()
    }
  }
}
