import Synchronization

/// A part's loop task and its end, in one place: started once, cancelled and awaited on
/// shutdown, and awaited by the part's `run()` to notice the loop ended by itself.
public final class BackgroundLoop: Sendable {
  private let loop = Mutex<(task: Task<Void, Never>, ended: Completion)?>(nil)

  public init() {}

  /// Runs `body` in a task of its own unless one runs already; what it throws ends the loop
  /// with that error.
  public func start(_ body: @escaping @Sendable () async throws -> Void) {
    loop.withLock { loop in
      guard loop == nil else { return }
      let ended = Completion()
      let task = Task {
        do {
          try await body()
          ended.finish()
        } catch {
          ended.finish(throwing: error)
        }
      }
      loop = (task, ended)
    }
  }

  /// The running loop's task, if any (for a shutdown that first lets it finish on its own).
  public var task: Task<Void, Never>? { loop.withLock { $0?.task } }

  /// Cancels the loop (unless `cancelling` is false) and returns once it has ended; it may be
  /// started again afterwards.
  public func stop(cancelling: Bool = true) async {
    guard let task else { return }
    if cancelling { task.cancel() }
    await task.value
    loop.withLock { $0 = nil }
  }

  /// Returns when the loop has ended, throwing what ended it.
  public func finished() async throws {
    try await loop.withLock { $0?.ended }?.wait()
  }
}
