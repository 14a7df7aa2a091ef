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
    if let reply = try remembered(request, key: "tree", cacheControl: Self.sharedCaching) { return reply }
    guard let snapshot = catalogue.snapshot(hub: try request.hubParameter(), now: clock.now()) else {
      return nil
    }
    return answer(
      snapshot.categoriesReply, from: snapshot, key: "tree", cacheControl: Self.sharedCaching, request)
  }

  @Sendable func categories(_ request: HTTPRequest) async throws -> HTTPResponse {
    let snapshot = try await catalogueSnapshot(try request.hubParameter())
    return answer(
      snapshot.categoriesReply, from: snapshot, key: "tree", cacheControl: Self.sharedCaching, request)
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
    if let reply = try remembered(request, key: Self.pageKey(request), cacheControl: Self.sharedCaching) {
      return reply
    }
    guard let snapshot = catalogue.snapshot(hub: try request.hubParameter(), now: clock.now()) else {
      return nil
    }
    return try categoryPage(request, in: snapshot)
  }

  /// A page's reply is kept under its path and query: the same bytes ask for the same page.
  private static func pageKey(_ request: HTTPRequest) -> String { request.rawPath + "?" + request.rawQuery }

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
    return answer(
      snapshot.pageReply(category: category, items: page.items, nextCursor: next), from: snapshot,
      key: Self.pageKey(request), cacheControl: Self.sharedCaching, request)
  }

  // MARK: Home

  @Sendable func homeFromMemory(_ request: inout HTTPRequest) throws -> HTTPResponse? {
    let accepted = HomeSectionType.accepted(request.query["sections"])
    // A signed-in caller's buy again is read from the database, off this thread.
    if request.principal != nil && accepted.contains(.buyAgain) { return nil }
    let key = "home?" + request.rawQuery
    if let reply = try remembered(request, key: key, cacheControl: Self.personalCaching) { return reply }
    guard let snapshot = catalogue.snapshot(hub: try request.hubParameter(), now: clock.now()) else {
      return nil
    }
    return homeReply(request, snapshot: snapshot, accepted: accepted, buyAgain: nil, key: key)
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
    return homeReply(
      request, snapshot: snapshot, accepted: accepted, buyAgain: buyAgain,
      key: buyAgain == nil ? "home?" + request.rawQuery : nil)
  }

  /// The home's reply. One without buy again is the same for everyone who asked alike: it is
  /// kept until the hub next opens or closes (which changes its `hours`), at most a minute.
  private func homeReply(
    _ request: HTTPRequest, snapshot: CatalogueSnapshot, accepted: Set<HomeSectionType>, buyAgain: [SKU]?,
    key: String?
  ) -> HTTPResponse {
    let now = clock.now()
    let hours = snapshot.hub.hours.status(at: now)
    let change = (hours.isOpen ? hours.closesAt : hours.opensAt) ?? now + 60
    return answer(
      snapshot.home(accepting: accepted, buyAgain: buyAgain, hours: hours), from: snapshot, key: key,
      validUntil: min(change, now + 60), cacheControl: Self.personalCaching, request)
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
    let skus = snapshot.search(terms, offset: offset, limit: limit + 1)
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

  // MARK: Snapshots and the replies kept with them

  /// A reply kept for `key` with the hub's current snapshot, or nil.
  private func remembered(_ request: HTTPRequest, key: String, cacheControl: String) throws -> HTTPResponse? {
    guard let reply = catalogue.reply(hub: try request.hubParameter(), key: key, now: clock.now()) else {
      return nil
    }
    return .cacheable(reply.body, tag: reply.tag, cacheControl: cacheControl, for: request)
  }

  /// Answers `body` with its tag, keeping both under `key` (when given) while `snapshot` is the
  /// hub's and until `validUntil`.
  private func answer(
    _ body: [UInt8], from snapshot: CatalogueSnapshot, key: String?, validUntil: Date = .distantFuture,
    cacheControl: String, _ request: HTTPRequest
  ) -> HTTPResponse {
    let tag = HTTPResponse.entityTag(of: body)
    if let key {
      catalogue.keep(
        CatalogueMemory.Reply(body: body, tag: tag, validUntil: validUntil), hub: snapshot.hub.id, key: key,
        from: snapshot)
    }
    return .cacheable(body, tag: tag, cacheControl: cacheControl, for: request)
  }

  /// `hub`'s catalogue from memory, or read and kept; 404 when there is no such hub.
  func catalogueSnapshot(_ hub: HubID) async throws -> CatalogueSnapshot {
    try await catalogue.snapshot(hub: hub, now: clock.now()) {
      guard let snapshot = try await stored({ try $0.catalogueSnapshot(hub: hub) }) else {
        throw Self.unknownHub(hub)
      }
      return snapshot
    }
  }
}

/// The reply of `PUT /v1/hubs/{hub}/home`: `{ hub, sections }` as stored.
struct HomeLayoutView: Encodable {
  var hub: HubID
  var sections: [HomeSection]
}
