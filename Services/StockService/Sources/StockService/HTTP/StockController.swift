import Foundation
import GrocerContracts
import GrocerCore
import GrocerHTTP
import GrocerRuntime
import GrocerStorage

/// StockService's HTTP API: the stock hot path, products, hubs and the staff writes.
///
/// Catalogue reads are public (the app's catalogue and a CDN may cache them); every write
/// needs a staff token for that hub.
struct StockController: Sendable {
  let commands: StockCommands
  let cache: StockCache
  let catalogue: CatalogueMemory
  let cursors: PageCursorCodec
  let hubs: HubDirectory
  let misses = StockMissLoader()
  let clock: any WallClock
  let logger: Logger
  /// The hub a caller without an address browses (`GROCER_DEFAULT_HUB`).
  let defaultHub: HubID

  var routes: [Route] {
    [
      Route("GET", "/v1/hubs/{hub}/stock", stockFromStorage).answeringFromMemory(stockFromMemory),
      Route("GET", "/v1/hubs/{hub}/products", listProducts),
      Route("GET", "/v1/hubs/{hub}/products/{sku}", getProduct),
      Route("PUT", "/v1/hubs/{hub}/products/{sku}", auth: .roles([.staff]), putProduct),
      Route("PUT", "/v1/hubs/{hub}/stock/{sku}", auth: .roles([.staff]), putStock),
      Route("POST", "/v1/hubs/{hub}/stock/{sku}/adjustments", auth: .roles([.staff]), postAdjustment),
      Route("GET", "/v1/hubs/{hub}", getHub),
      Route("PUT", "/v1/hubs/{hub}", auth: .roles([.staff]), putHub),
      Route("GET", "/v1/delivery-area", deliveryArea).answeringFromMemory(deliveryAreaFromMemory),
      Route("PUT", "/v1/hubs/{hub}/delivery-area", auth: .roles([.staff]), putDeliveryArea),
    ] + catalogueRoutes
  }

  // MARK: Stock (the hot path)

  /// Answers inside the transport's callback when every id is cached and fresh; nil sends the
  /// request to `stockFromStorage` with the connection suspended.
  @Sendable func stockFromMemory(_ request: inout HTTPRequest) throws -> HTTPResponse? {
    let hub = try request.hubParameter()
    let now = clock.now()
    if let remembered = cache.rememberedReply(hub: hub, query: request.rawQuery, now: now) {
      return Self.response(remembered)
    }
    let skus = try Self.ids(request)
    guard hubs.contains(hub) else { return nil }
    let lookup = cache.lookup(hub: hub, skus: skus, now: now)
    guard lookup.isComplete else { return nil }
    let reply = StockReplyWriter.reply(skus: skus, lookup: lookup, now: now, timeToLive: cache.timeToLive)
    // Only a query of `ids` alone is remembered: other parameters would let a client fill memory
    // with copies of one reply.
    let query = request.rawQuery.utf8
    if !(query.withContiguousStorageIfAvailable { $0.contains(UInt8(ascii: "&")) }
      ?? query.contains(UInt8(ascii: "&")))
    {
      cache.remember(reply, hub: hub, query: request.rawQuery, lookup: lookup)
    }
    return Self.response(reply)
  }

  /// Reads the missed counts from the database, fills the cache and answers.
  @Sendable func stockFromStorage(_ request: HTTPRequest) async throws -> HTTPResponse {
    let hub = try request.hubParameter()
    let skus = try Self.ids(request)
    try await requireHub(hub)
    let now = clock.now()
    var lookup = cache.lookup(hub: hub, skus: skus, now: now)
    if !lookup.isComplete {
      let (cache, clock, generation) = (self.cache, self.clock, lookup.generation)
      // Only a miss on an aged-out entry looks for the others (a walk over the hub's entries);
      // a first read or an invalidation reads just its own.
      let metAgedOut = lookup.metAgedOut
      let (rows, readAt) = try await misses.rows(
        hub: hub, skus: lookup.misses, epoch: lookup.epoch,
        alsoRefresh: { metAgedOut ? cache.expired(hub: hub, now: now, limit: Self.refreshLimit) : [] }
      ) { skus in
        let readAt = clock.now()
        let rows = try await stored { try $0.store.counts(hub: hub, skus: skus) }
        cache.fill(hub: hub, rows: rows, readAt: readAt, generation: generation)
        return (rows, readAt)
      }
      lookup.resolve(skus: skus, rows: rows, readAt: readAt)
    }
    return Self.response(
      StockReplyWriter.reply(skus: skus, lookup: lookup, now: clock.now(), timeToLive: cache.timeToLive))
  }

  /// At most this many aged-out entries are refreshed along with a miss (past 256 the store
  /// reads the hub in one scan).
  static let refreshLimit = 4000

  private static func ids(_ request: HTTPRequest) throws(HTTPError) -> [SKU] {
    // A bad query parameter is malformed input: 400, whatever rule it broke.
    do { return try StockIDs.parse(request.queryParameter("ids")) } catch {
      throw HTTPError.badRequest(code: error.code, detail: error.detail)
    }
  }

  private static func response(_ reply: StockReply) -> HTTPResponse {
    var response = HTTPResponse.json(status: 200, bytes: reply.body)
    response.headers.add(
      "Cache-Control",
      cacheControlValues.indices.contains(reply.maxAge)
        ? cacheControlValues[reply.maxAge] : "max-age=\(reply.maxAge)")
    return response
  }

  /// `max-age=0` … `max-age=120`, made once: every stock answer carries one.
  private static let cacheControlValues = (0...120).map { "max-age=\($0)" }

  // MARK: Products

  @Sendable func listProducts(_ request: HTTPRequest) async throws -> HTTPResponse {
    let hub = try request.hubParameter()
    try await requireHub(hub)
    let query = request.query
    let limit: Int
    if let text = query["limit"] {
      guard let value = Int(text), (1...100).contains(value) else {
        throw HTTPError.badRequest(
          code: "invalidLimit", detail: "`limit` must be a whole number from 1 to 100")
      }
      limit = value
    } else {
      limit = 100
    }
    let after = query["after"]
    if let after, !Identifier.isValid(after) {
      throw HTTPError.badRequest(code: "invalidCursor", detail: "`after` must be a product id")
    }
    let items = try await stored { try $0.store.products(hub: hub, after: after, limit: limit) }
    return try .json(
      status: 200,
      value: ProductPage(items: items, next: items.count == limit ? items.last?.product.sku : nil))
  }

  @Sendable func getProduct(_ request: HTTPRequest) async throws -> HTTPResponse {
    let hub = try request.hubParameter()
    let sku = try request.skuParameter()
    try await requireHub(hub)
    guard let product = try await stored({ try $0.store.product(hub: hub, sku: sku) }) else {
      throw HTTPError.notFound(code: "unknownProduct", detail: "hub \(hub) has no product \(sku)")
    }
    return try .json(status: 200, value: product)
  }

  @Sendable func putProduct(_ request: HTTPRequest) async throws -> HTTPResponse {
    let hub = try request.hubParameter()
    let sku = try request.skuParameter()
    _ = try request.requireStaff(of: hub)
    let body = try request.decodeStrict(ProductUpsert.self)
    let correlationID = request.requestID
    guard
      let (saved, created, movement) = try await stored({
        try $0.upsertProduct(hub: hub, sku: sku, body, correlationID: correlationID)
      })
    else { throw Self.unknownHub(hub) }
    if let movement {
      cache.invalidate(hub: movement.hub, sku: movement.sku, sequence: movement.version)
      catalogue.invalidate(hub: hub)
    }
    return try .json(status: created ? 201 : 200, value: saved)
  }

  // MARK: Counts

  @Sendable func putStock(_ request: HTTPRequest) async throws -> HTTPResponse {
    let hub = try request.hubParameter()
    let sku = try request.skuParameter()
    let staff = try request.requireStaff(of: hub)
    let body = try request.decodeStrict(StockSet.self)
    let count: Int
    do { count = try body.validate() } catch { throw error.httpError }
    try await requireHub(hub)
    let correlationID = request.requestID
    return try await changed {
      try $0.setStock(hub: hub, sku: sku, onHand: count, actor: staff.subject, correlationID: correlationID)
    }
  }

  @Sendable func postAdjustment(_ request: HTTPRequest) async throws -> HTTPResponse {
    let hub = try request.hubParameter()
    let sku = try request.skuParameter()
    let staff = try request.requireStaff(of: hub)
    let body = try request.decodeStrict(StockAdjustment.self)
    do { try body.validate() } catch { throw error.httpError }
    try await requireHub(hub)
    let correlationID = request.requestID
    return try await changed {
      try $0.adjustStock(
        hub: hub, sku: sku, adjustment: body, actor: staff.subject, correlationID: correlationID)
    }
  }

  /// A count change: drops the cached count it moved and answers the product.
  private func changed(
    _ change: @escaping @Sendable (StockCommands) throws -> (StockedProduct, StockMovement?)
  ) async throws -> HTTPResponse {
    let (product, movement) = try await stored(change)
    if let movement { cache.invalidate(hub: movement.hub, sku: movement.sku, sequence: movement.version) }
    return try .json(status: 200, value: product)
  }

  /// Runs a use case or a read off the cooperative pool (SQLite blocks on its lock and the
  /// disk). A broken rule becomes its problem; storage trouble (busy, I/O) a 503 with
  /// `Retry-After`.
  func stored<T: Sendable>(_ body: @escaping @Sendable (StockCommands) throws -> T) async throws -> T {
    let commands = self.commands
    do {
      return try await runBlocking { try body(commands) }
    } catch let error as StockStoreError {
      switch error {
      case .domain(let rule): throw rule.httpError
      case .storage(let trouble): throw unavailable(trouble)
      }
    } catch let error as DomainError {
      throw error.httpError
    } catch let error as StorageError {
      throw unavailable(error)
    }
  }

  private func unavailable(_ error: any Error) -> HTTPError {
    logger.error("stock storage failed", ["error": "\(error)"])
    return .serviceUnavailable(retryAfter: 1, detail: "stock storage is busy; try again")
  }

  // MARK: Hubs

  @Sendable func getHub(_ request: HTTPRequest) async throws -> HTTPResponse {
    let hub = try request.hubParameter()
    guard let found = try await stored({ try $0.store.hub(hub) }) else { throw Self.unknownHub(hub) }
    return try .json(status: 200, value: HubView(hub: found, now: clock.now()))
  }

  @Sendable func putHub(_ request: HTTPRequest) async throws -> HTTPResponse {
    let id = try request.hubParameter()
    _ = try request.requireStaff(of: id)
    let body = try request.decodeStrict(HubUpsert.self)
    let correlationID = request.requestID
    let (hub, created) = try await stored { try $0.upsertHub(id: id, body, correlationID: correlationID) }
    hubs.insert(id)
    catalogue.invalidate(hub: id)
    return try .json(status: created ? 201 : 200, value: HubView(hub: hub, now: clock.now()))
  }

  /// 404 unless the hub exists (asking the database when this replica has not heard of it).
  private func requireHub(_ hub: HubID) async throws {
    if hubs.contains(hub) { return }
    guard try await stored({ try $0.store.hub(hub) }) != nil else { throw Self.unknownHub(hub) }
    hubs.insert(hub)
  }

  static func unknownHub(_ hub: HubID) -> HTTPError {
    .notFound(code: "unknownHub", detail: "there is no hub \(hub)")
  }
}

/// One page of products: `{ items, next }`; `next` is the cursor for `after`, null at the end
/// (written out as `null`: the document makes it required, and a synthesized encoder would leave
/// it out).
struct ProductPage: Encodable {
  var items: [StockedProduct]
  var next: SKU?

  private enum CodingKeys: String, CodingKey { case items, next }

  func encode(to encoder: any Encoder) throws {
    var container = encoder.container(keyedBy: CodingKeys.self)
    try container.encode(items, forKey: .items)
    try container.encode(next, forKey: .next)
  }
}
