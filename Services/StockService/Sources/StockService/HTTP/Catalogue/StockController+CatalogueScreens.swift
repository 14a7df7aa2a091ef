import Foundation
import GrocerContracts
import GrocerCore
import GrocerHTTP

/// The app's catalogue screens: the category tree and its pages (the same for everyone at a
/// hub: `public, max-age=300`), the home the server arranges (personal: `private`), search, and
/// the staff writes that arrange them. Every reply names its hub and carries an `ETag`.
extension StockController {
  var catalogueRoutes: [Route] {
    [
      Route("GET", "/v1/hubs/{hub}/categories", categories).answeringFromMemory(categoriesFromMemory),
      Route("PUT", "/v1/hubs/{hub}/categories", auth: .roles([.staff]), putCategories),
      Route("GET", "/v1/hubs/{hub}/categories/{category}/products", categoryPage)
        .answeringFromMemory(categoryPageFromMemory),
      Route("GET", "/v1/hubs/{hub}/home", auth: .optional, home).answeringFromMemory(homeFromMemory),
      Route("PUT", "/v1/hubs/{hub}/home", auth: .roles([.staff]), putHome),
      Route("GET", "/v1/hubs/{hub}/search", search),
    ]
  }

  static let sharedCaching = "public, max-age=300"
  static let personalCaching = "private, max-age=0, must-revalidate"

  // MARK: Category tree

  @Sendable func categoriesFromMemory(_ request: inout HTTPRequest) throws -> HTTPResponse? {
    guard let snapshot = catalogue.snapshot(hub: try request.hubParameter(), now: clock.now()) else {
      return nil
    }
    return .cacheable(snapshot.categoriesReply, cacheControl: Self.sharedCaching, for: request)
  }

  @Sendable func categories(_ request: HTTPRequest) async throws -> HTTPResponse {
    let snapshot = try await catalogueSnapshot(try request.hubParameter())
    return .cacheable(snapshot.categoriesReply, cacheControl: Self.sharedCaching, for: request)
  }

  @Sendable func putCategories(_ request: HTTPRequest) async throws -> HTTPResponse {
    let hub = try request.hubParameter()
    _ = try request.requireStaff(of: hub)
    let body = try request.decodeStrict(CategoriesBody.self)
    let tree: CategoryTree
    do { tree = try body.validate() } catch { throw error.httpError }
    let correlationID = request.requestID
    guard try await stored({ try $0.setCategories(hub: hub, tree, correlationID: correlationID) }) != nil
    else {
      throw Self.unknownHub(hub)
    }
    catalogue.invalidate(hub: hub)
    return try await categories(request)
  }

  // MARK: Category pages

  @Sendable func categoryPageFromMemory(_ request: inout HTTPRequest) throws -> HTTPResponse? {
    guard let snapshot = catalogue.snapshot(hub: try request.hubParameter(), now: clock.now()) else {
      return nil
    }
    return try categoryPage(request, in: snapshot)
  }

  @Sendable func categoryPage(_ request: HTTPRequest) async throws -> HTTPResponse {
    try categoryPage(request, in: try await catalogueSnapshot(try request.hubParameter()))
  }

  private func categoryPage(_ request: HTTPRequest, in snapshot: CatalogueSnapshot) throws -> HTTPResponse {
    let hub = snapshot.hub.id
    let category = try request.pathParameter("category")
    let list = PageCursor.List.category(category)
    let query = request.query
    let limit: Int
    let after: SKU?
    do {
      limit = try PageLimit.parse(query["limit"])
      after = try query["cursor"].map { cursor throws(DomainError) in
        try cursors.position(cursor, hub: hub, list: list)
      }
    } catch {
      throw error.httpError
    }
    guard let page = snapshot.page(category: category, after: after, limit: limit) else {
      throw HTTPError.notFound(code: "unknownCategory", detail: "hub \(hub) has no category \(category)")
    }
    let next = page.next.map { cursors.encode(PageCursor(hub: hub, list: list, position: $0)) }
    return .cacheable(
      snapshot.pageReply(category: category, items: page.items, nextCursor: next),
      cacheControl: Self.sharedCaching,
      for: request)
  }

  // MARK: Home

  @Sendable func homeFromMemory(_ request: inout HTTPRequest) throws -> HTTPResponse? {
    let hub = try request.hubParameter()
    let accepted = HomeSectionType.accepted(request.query["sections"])
    // A signed-in caller's buy again is read from the database, off this thread.
    if request.principal != nil && accepted.contains(.buyAgain) { return nil }
    guard let snapshot = catalogue.snapshot(hub: hub, now: clock.now()) else { return nil }
    return .cacheable(
      snapshot.home(accepting: accepted, buyAgain: nil, now: clock.now()), cacheControl: Self.personalCaching,
      for: request)
  }

  @Sendable func home(_ request: HTTPRequest) async throws -> HTTPResponse {
    let hub = try request.hubParameter()
    let accepted = HomeSectionType.accepted(request.query["sections"])
    let snapshot = try await catalogueSnapshot(hub)
    var buyAgain: [SKU]?
    if let user = request.principal?.subject, accepted.contains(.buyAgain),
      let limit = snapshot.layout.sections.first(where: { $0.type == .buyAgain })?.rowLimit
    {
      // Read a few more than shown: some may have left the assortment since.
      buyAgain = try await stored { try $0.buyAgain(hub: hub, user: user, limit: limit * 2) }
    }
    return .cacheable(
      snapshot.home(accepting: accepted, buyAgain: buyAgain, now: clock.now()),
      cacheControl: Self.personalCaching,
      for: request)
  }

  @Sendable func putHome(_ request: HTTPRequest) async throws -> HTTPResponse {
    let hub = try request.hubParameter()
    _ = try request.requireStaff(of: hub)
    let body = try request.decodeStrict(HomeLayoutBody.self)
    let layout: HomeLayout
    do { layout = try body.validate() } catch { throw error.httpError }
    let correlationID = request.requestID
    guard let saved = try await stored({ try $0.setHome(hub: hub, layout, correlationID: correlationID) })
    else {
      throw Self.unknownHub(hub)
    }
    catalogue.invalidate(hub: hub)
    return try .json(status: 200, value: HomeLayoutView(hub: hub, sections: saved.sections))
  }

  // MARK: Search

  @Sendable func search(_ request: HTTPRequest) async throws -> HTTPResponse {
    let hub = try request.hubParameter()
    let query = request.query
    let terms: SearchQuery
    let limit: Int
    let offset: Int
    do throws(DomainError) {
      terms = try SearchQuery(query["q"])
      limit = try PageLimit.parse(query["limit"])
      offset =
        try query["cursor"].map { cursor throws(DomainError) in
          let position = try cursors.position(cursor, hub: hub, list: .search(terms.normalized))
          guard let value = Int(position), value >= 0 else {
            throw .invalidCursor("is not one this server gave out")
          }
          return value
        } ?? 0
    } catch {
      throw error.httpError
    }
    let snapshot = try await catalogueSnapshot(hub)
    // One more than asked tells whether another page follows.
    let skus = try await stored { try $0.search(hub: hub, terms, offset: offset, limit: limit + 1) }
    let more = skus.count > limit
    let items = skus.prefix(limit).compactMap { snapshot.entry($0)?.json }
    let next =
      more
      ? cursors.encode(
        PageCursor(hub: hub, list: .search(terms.normalized), position: String(offset + limit))) : nil
    var json = JSONBytes(capacity: 512 * (items.count + 1))
    json.beginObject()
    json.key("hub")
    json.string(hub)
    json.key("items")
    json.beginArray()
    for item in items { json.json(item) }
    json.endArray()
    json.key("nextCursor")
    if let next { json.string(next) } else { json.null() }
    json.key("query")
    json.string(terms.normalized)
    json.endObject()
    return .cacheable(json.bytes, cacheControl: Self.sharedCaching, for: request)
  }

  // MARK: Snapshots

  /// `hub`'s catalogue from memory, or read and kept; 404 when there is no such hub.
  func catalogueSnapshot(_ hub: HubID) async throws -> CatalogueSnapshot {
    let now = clock.now()
    if let snapshot = catalogue.snapshot(hub: hub, now: now) { return snapshot }
    let generation = catalogue.generation(hub: hub)
    guard let snapshot = try await stored({ try $0.catalogueSnapshot(hub: hub) }) else {
      throw Self.unknownHub(hub)
    }
    catalogue.keep(snapshot, generation: generation, builtAt: now)
    return snapshot
  }
}

/// The reply of `PUT /v1/hubs/{hub}/home`: `{ hub, sections }` as stored.
struct HomeLayoutView: Encodable {
  var hub: HubID
  var sections: [HomeSection]
}
