import GrocerCore
import Synchronization

/// Runs `body` every `interval` (first right after `start`) until shutdown, and `body` once more
/// after the loop stopped when `finalRound` is set (a flusher's last batch): the shape of every
/// sweeper. An error is logged and the next round runs as usual; the loop ending other than by
/// `shutdown` ends `run()` with an error.
public final class PeriodicTask: LifecycleService {
  public let name: String
  private let interval: Duration
  private let logger: Logger
  private let body: @Sendable () async throws -> Void
  private let finalRound: Bool
  private let loop = BackgroundLoop()

  public init(
    name: String, interval: Duration, logger: Logger, finalRound: Bool = false,
    body: @escaping @Sendable () async throws -> Void
  ) {
    self.name = name
    self.interval = interval
    self.logger = logger
    self.finalRound = finalRound
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
    guard finalRound else { return }
    do { try await body() } catch { logger.error("\(name) failed in its final round", ["error": "\(error)"]) }
  }

  public func finished() async throws {
    try await loop.finished()
  }
}
