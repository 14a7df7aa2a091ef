import GrocerCore
import Synchronization

/// Runs `body` every `interval` (first right after `start`) until shutdown: the shape of every
/// sweeper. An error is logged and the next round runs as usual; the loop ending other than by
/// `shutdown` ends `run()` with an error.
public final class PeriodicTask: LifecycleService {
  public let name: String
  private let interval: Duration
  private let logger: Logger
  private let body: @Sendable () async throws -> Void
  private let loop = BackgroundLoop()

  public init(
    name: String, interval: Duration, logger: Logger, body: @escaping @Sendable () async throws -> Void
  ) {
    self.name = name
    self.interval = interval
    self.logger = logger
    self.body = body
  }

  public func start() async throws {
    loop.start { [name, interval, logger, body] in
      while !Task.isCancelled {
        do { try await body() } catch {
          logger.error("\(name) failed", ["error": "\(error)"])
        }
        try? await Task.sleep(for: interval)
      }
    }
  }

  public func shutdown() async {
    await loop.stop()
  }

  public func finished() async throws {
    try await loop.finished()
  }
}
