import Foundation
import GrocerAMQP
import GrocerContracts
import GrocerCore
import Synchronization

/// Fills the catalogue copy from StockService when it was never filled: asks for every hub,
/// then every hub's products page by page, over request/reply. Versions make it commute with
/// the events arriving meanwhile. Retries with backoff until StockService answers; until then
/// a cart at a hub not known yet is a 503 `catalogueLoading`, not a 404.
final class CatalogueSync: LifecycleService {
  let name = "catalogue-sync"
  private let store: CartStore
  private let client: AMQPRPCClient
  private let queue: String
  private let timeout: Duration
  private let logger: Logger
  private let task = Mutex<Task<Void, Never>?>(nil)

  init(store: CartStore, client: AMQPRPCClient, queue: String, timeout: Duration, logger: Logger) {
    self.store = store
    self.client = client
    self.queue = queue
    self.timeout = timeout
    self.logger = logger
  }

  func start() async throws {
    guard try !store.catalogueSynced() else { return }
    let loop = Task { [self] in
      var delay = Duration.milliseconds(500)
      while !Task.isCancelled {
        do {
          let counts = try await syncOnce()
          logger.info(
            "catalogue copy filled from stock-service",
            ["hubs": "\(counts.hubs)", "products": "\(counts.products)"])
          return
        } catch {
          logger.warning(
            "catalogue copy not filled yet; asking again", ["error": "\(error)", "retry.in": "\(delay)"])
          try? await Task.sleep(for: delay)
          delay = min(delay * 2, .seconds(30))
        }
      }
    }
    task.withLock { $0 = loop }
  }

  func shutdown() async {
    let running = task.withLock { $0 }
    running?.cancel()
    await running?.value
  }

  /// One complete pass; throws if any request fails (the next pass starts over, harmlessly).
  func syncOnce() async throws -> (hubs: Int, products: Int) {
    let store = self.store
    let hubs = try await ask(.hubs).hubs ?? []
    try await runBlocking { try store.applyCatalogue(hubs: hubs, products: []) }
    var products = 0
    for hub in hubs {
      var after: SKU?
      repeat {
        let page = try await ask(.products(hub: hub.value.hub, after: after))
        let items = page.products ?? []
        try await runBlocking { try store.applyCatalogue(hubs: [], products: items) }
        products += items.count
        after = page.next
      } while after != nil
    }
    try await runBlocking { try store.markCatalogueSynced() }
    return (hubs.count, products)
  }

  private func ask(_ request: CatalogueRequest) async throws -> CatalogueReply {
    let body = try JSON.encode(request)
    let data = try await client.request(routingKey: queue, body: body, timeout: timeout)
    let reply = try JSON.decode(CatalogueReply.self, from: data)
    if let error = reply.error { throw error }
    return reply
  }
}
