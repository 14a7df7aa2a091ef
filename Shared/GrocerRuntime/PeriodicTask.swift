import GrocerCore
import Synchronization

/// Runs `body` every `interval` (first right after `start`) until shutdown: the shape of every
/// sweeper. An error is logged and the next round runs as usual.
public final class PeriodicTask: LifecycleService {
  public let name: String
  private let interval: Duration
  private let logger: Logger
  private let body: @Sendable () async throws -> Void
  private let task = Mutex<Task<Void, Never>?>(nil)

  public init(
    name: String, interval: Duration, logger: Logger, body: @escaping @Sendable () async throws -> Void
  ) {
    self.name = name
    self.interval = interval
    self.logger = logger
    self.body = body
  }

  public func start() async throws {
    let loop = Task { [name, interval, logger, body] in
      while !Task.isCancelled {
        do { try await body() } catch {
          logger.error("\(name) failed", ["error": "\(error)"])
        }
        try? await Task.sleep(for: interval)
      }
    }
    task.withLock { $0 = loop }
  }

  public func shutdown() async {
    let running = task.withLock { $0 }
    running?.cancel()
    await running?.value
  }
}
