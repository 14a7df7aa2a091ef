import Synchronization

/// A count of work under way that a shutdown can await until none is left, without polling it.
///
/// `enter` and `leave` are an atomic add each; `leave` takes a lock only when it brings the
/// count to zero, to finish the `Completion` a drain may be waiting on.
public final class InFlight: Sendable {
  private let count = Atomic<Int>(0)
  /// What the drains under way wait on; nil when none waits.
  private let drained = Mutex<Completion?>(nil)

  public init() {}

  /// The work under way now.
  public var value: Int { count.load(ordering: .acquiring) }

  public func enter() { count.add(1, ordering: .acquiringAndReleasing) }

  public func leave() {
    guard count.subtract(1, ordering: .acquiringAndReleasing).newValue == 0 else { return }
    drained.withLock { waiting -> Completion? in
      defer { waiting = nil }
      return waiting
    }?.finish()
  }

  /// True as soon as nothing is under way (at once if nothing is), false if `limit` passes
  /// first or the waiting task is cancelled.
  public func drain(within limit: Duration) async -> Bool {
    let completion = drained.withLock { waiting -> Completion in
      if let waiting { return waiting }
      let completion = Completion()
      waiting = completion
      return completion
    }
    // After the completion is in place, so a `leave` to zero from now on finishes it.
    if value == 0 { return true }
    return await withTaskGroup(of: Bool.self) { group in
      group.addTask { (try? await completion.wait()) != nil }
      group.addTask {
        try? await Task.sleep(for: limit)
        return false
      }
      defer { group.cancelAll() }
      return await group.next() ?? false
    }
  }
}
