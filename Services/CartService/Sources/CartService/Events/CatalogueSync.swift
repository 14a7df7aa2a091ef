import Foundation
import GrocerAMQP
import GrocerContracts
import GrocerCore
import GrocerRuntime
import Synchronization

/// Fills the catalogue copy from StockService when it was never filled: asks for every hub,
/// then every hub's products page by page, over request/reply. Versions make it commute with
/// the events arriving meanwhile. Retries with backoff until StockService answers; until then
/// a cart at a hub not known yet is a 503 `catalogueLoading`, not a 404.
///
/// A request for a hub the copy does not know asks for that one hub (`fillHub`), so a hub
/// whose events this service never received (its queue did not exist yet) is still usable.
final class CatalogueSync: LifecycleService {
  let name = "catalogue-sync"
  private let commands: CartCommands
  private let client: any AMQPRequester
  private let queue: String
  private let timeout: Duration
  private let logger: Logger
  private let task = Mutex<Task<Void, Never>?>(nil)
  /// Finished by `shutdown`: filling the copy ends on its own once it succeeded.
  private let stopped = Completion()
  /// When each hub was last asked for on demand.
  private let asked = Mutex<[HubID: ContinuousClock.Instant]>([:])
  /// A hub is asked for on demand at most once per this long.
  static let askInterval = Duration.seconds(30)

  init(commands: CartCommands, client: any AMQPRequester, queue: String, timeout: Duration, logger: Logger) {
    self.commands = commands
    self.client = client
    self.queue = queue
    self.timeout = timeout
    self.logger = logger
  }

  func start() async throws {
    let loop = Task { [self] in
      var delay = Duration.milliseconds(500)
      while !Task.isCancelled {
        do {
          // Read in the loop: a database that is not up yet is asked again like StockService.
          if try commands.store.catalogueSynced() { return }
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
    stopped.finish()
  }

  func finished() async throws { try await stopped.wait() }

  /// Asks StockService for `hub` and fills it in (its settings and products) if it exists there.
  /// At most once per hub per `askInterval`; false when it was not asked, does not exist or the
  /// request failed.
  func fillHub(_ hub: HubID) async -> Bool {
    let now = ContinuousClock.now
    let due = asked.withLock { asked -> Bool in
      if let last = asked[hub], now - last < Self.askInterval { return false }
      if asked.count >= 10_000 { asked.removeAll() }
      asked[hub] = now
      return true
    }
    guard due else { return false }
    do {
      // A caller waits on this: ask briefly.
      let hubs = try await ask(.hubs, timeout: min(timeout, .seconds(2))).hubs
      guard let found = hubs?.first(where: { $0.value.hub == hub }) else { return false }
      let commands = self.commands
      try await runBlocking { try commands.applyCatalogue(hubs: [found], products: []) }
      let products = try await fillProducts(of: hub)
      logger.info("hub filled in on demand from stock-service", ["hub": hub, "products": "\(products)"])
      return true
    } catch {
      logger.warning("hub could not be filled in on demand", ["hub": hub, "error": "\(error)"])
      return false
    }
  }

  /// One complete pass; throws if any request fails (the next pass starts over, harmlessly).
  func syncOnce() async throws -> (hubs: Int, products: Int) {
    let commands = self.commands
    let hubs = try await ask(.hubs).hubs ?? []
    try await runBlocking { try commands.applyCatalogue(hubs: hubs, products: []) }
    var products = 0
    for hub in hubs { products += try await fillProducts(of: hub.value.hub) }
    try await runBlocking { try commands.markCatalogueSynced() }
    return (hubs.count, products)
  }

  /// Every product of `hub`, page by page; returns how many.
  private func fillProducts(of hub: HubID) async throws -> Int {
    let commands = self.commands
    var count = 0
    var after: SKU?
    repeat {
      let page = try await ask(.products(hub: hub, after: after))
      let items = page.products ?? []
      try await runBlocking { try commands.applyCatalogue(hubs: [], products: items) }
      count += items.count
      after = page.next
    } while after != nil
    return count
  }

  private func ask(_ request: CatalogueRequest, timeout: Duration? = nil) async throws -> CatalogueReply {
    let body = try JSON.encode(request)
    let data = try await client.request(routingKey: queue, body: body, timeout: timeout ?? self.timeout)
    let reply = try JSON.decode(CatalogueReply.self, from: data)
    if let error = reply.error { throw error }
    return reply
  }
}
