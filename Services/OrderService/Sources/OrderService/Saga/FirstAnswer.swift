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
func answer<T: Sendable>(
  within limit: Duration, cancellingLate: Bool, _ work: @escaping @Sendable () async -> T
) async -> T? {
  let answer = FirstAnswer<T?>()
  return await withCheckedContinuation { continuation in
    answer.wait(continuation)
    // The timer ends early (cancelled) when the work answers first.
    let timer = Task { () -> Bool in
      try? await Task.sleep(for: limit)
      return answer.give(nil)
    }
    let running = Task {
      answer.give(await work())
      timer.cancel()
    }
    if cancellingLate {
      Task { if await timer.value { running.cancel() } }
    }
  }
}
