import Synchronization

/// A continuation resumed by whichever answer comes first; later ones are dropped.
final class FirstAnswer<T: Sendable>: Sendable {
  private let continuation = Mutex<CheckedContinuation<T, Never>?>(nil)

  func wait(_ continuation: CheckedContinuation<T, Never>) {
    self.continuation.withLock { $0 = continuation }
  }

  func give(_ value: T) {
    continuation.withLock { $0.take() }?.resume(returning: value)
  }
}
