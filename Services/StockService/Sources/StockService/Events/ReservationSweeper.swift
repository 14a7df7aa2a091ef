import GrocerCore
import Synchronization

/// Releases reservations whose order outcome never arrived, every few seconds, and now and then
/// forgets old inbox entries.
final class ReservationSweeper: LifecycleService {
  let name = "reservation-sweeper"
  private let store: StockStore
  private let cache: StockCache
  private let interval: Duration
  private let logger: Logger
  private let task = Mutex<Task<Void, Never>?>(nil)

  init(store: StockStore, cache: StockCache, interval: Duration, logger: Logger) {
    self.store = store
    self.cache = cache
    self.interval = interval
    self.logger = logger
  }

  func start() async throws {
    let loop = Task { [store, cache, interval, logger] in
      var sweeps = 0
      while !Task.isCancelled {
        sweeps += 1
        if sweeps % 720 == 1 {
          do { _ = try await runBlocking { try store.purgeInbox() } } catch {
            logger.error("inbox purge failed", ["error": "\(error)"])
          }
        }
        do {
          let movements = try await runBlocking { try store.releaseExpired() }
          cache.apply(movements)
          if !movements.isEmpty {
            logger.info("expired reservations released", ["count": "\(movements.count)"])
          }
        } catch {
          logger.error("reservation sweep failed", ["error": "\(error)"])
        }
        try? await Task.sleep(for: interval)
      }
    }
    task.withLock { $0 = loop }
  }

  func shutdown() async {
    let running = task.withLock { $0 }
    running?.cancel()
    await running?.value
  }
}
