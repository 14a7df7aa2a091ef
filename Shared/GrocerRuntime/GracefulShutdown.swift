import Synchronization

/// Tells one running service to finish its work and return from `run()`.
///
/// `ServiceGroup` gives each of its services its own (as a task-local), so it can shut them down
/// one at a time in reverse order; services reach it through `gracefulShutdown()` and
/// `withGracefulShutdownHandler`, as in swift-service-lifecycle.
public final class GracefulShutdown: Sendable {
  @TaskLocal static var current: GracefulShutdown?

  private let triggered = Completion()
  private let handlers = Mutex<(next: Int, waiting: [Int: @Sendable () -> Void])?>((0, [:]))

  public init() {}

  /// Asks the service to shut down (running the handlers registered now); a second call does
  /// nothing.
  public func trigger() {
    guard
      let waiting = handlers.withLock({ state in
        defer { state = nil }; return state?.waiting
      })
    else {
      return
    }
    triggered.finish()
    for handler in waiting.values { handler() }
  }

  /// Whether `trigger` was called.
  public var isTriggered: Bool { triggered.isFinished }

  /// Runs `body` with this as the graceful shutdown that `gracefulShutdown()` waits for.
  public func scope<T>(_ body: () async throws -> T) async rethrows -> T {
    try await Self.$current.withValue(self) { try await body() }
  }

  func wait() async throws { try await triggered.wait() }

  /// Registers `handler` to run on `trigger`; runs it now (and returns nil) if already triggered.
  func register(_ handler: @escaping @Sendable () -> Void) -> Int? {
    let id = handlers.withLock { state -> Int? in
      guard state != nil else { return nil }
      let id = state!.next
      state!.next += 1
      state!.waiting[id] = handler
      return id
    }
    if id == nil { handler() }
    return id
  }

  func unregister(_ id: Int) {
    handlers.withLock { state in _ = state?.waiting.removeValue(forKey: id) }
  }
}

/// Returns once the running service is asked to shut down; throws `CancellationError` if its
/// task is cancelled first. Outside a service group it waits for cancellation only.
public func gracefulShutdown() async throws {
  if let current = GracefulShutdown.current {
    try await current.wait()
  } else {
    try await Completion().wait()
  }
}

/// Whether the running service was asked to shut down.
public var isShuttingDownGracefully: Bool { GracefulShutdown.current?.isTriggered ?? false }

/// Runs `operation`; if the service is asked to shut down meanwhile (or was already),
/// `onGracefulShutdown` runs once, while `operation` keeps going until it returns.
public func withGracefulShutdownHandler<T>(
  operation: () async throws -> T, onGracefulShutdown: @escaping @Sendable () -> Void
) async rethrows -> T {
  guard let current = GracefulShutdown.current, let id = current.register(onGracefulShutdown) else {
    return try await operation()
  }
  defer { current.unregister(id) }
  return try await operation()
}
