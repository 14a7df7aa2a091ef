import Foundation
import GrocerContracts
import GrocerCore
import GrocerHTTP
import Testing

@testable import StockService

/// The app's first screens over HTTP, on the demo catalogue: the tree, category pages, the
/// home, search, the staff writes that arrange them, and every refusal a caller can reach.
@Suite struct CatalogueScreensHTTPTests {
  struct Item: Decodable, Equatable {
    var sku: String
    var name: String
    var image: ProductImage?
    var price: Money
    var originalPrice: Money?
  }

  struct Page: Decodable {
    var hub: String
    var items: [Item]
    var nextCursor: String?
  }

  struct Tree: Decodable {
    var hub: String
    var categories: [Category]
  }

  struct Home: Decodable {
    struct Section: Decodable {
      var id: String
      var type: String
      var items: [JSONValue]
    }
    var hub: String
    var hours: HoursStatus
    var sections: [Section]
  }

  static func fixture() throws -> StockFixture { try StockFixture(productsPerHub: 400) }

  /// Every SKU of a list, page by page.
  func pageThrough(_ fixture: StockFixture, _ path: String, limit: Int) async throws -> [String] {
    var skus: [String] = []
    var cursor: String?
    repeat {
      let separator = path.contains("?") ? "&" : "?"
      let target = path + separator + "limit=\(limit)" + (cursor.map { "&cursor=\($0)" } ?? "")
      let response = await fixture.client.get(target)
      try #require(response.status == 200, "\(response.bodyString)")
      let page = try response.json(as: Page.self)
      #expect(page.items.count <= limit)
      skus += page.items.map(\.sku)
      cursor = page.nextCursor
    } while cursor != nil
    return skus
  }

  func problem(_ response: HTTPResponse) throws -> ProblemBody { try response.json(as: ProblemBody.self) }

  // MARK: Tree and pages

  @Test func theTreeIsPublicCacheableAndAnswers304ToItsOwnTag() async throws {
    let fixture = try Self.fixture()
    let response = await fixture.client.get("/v1/hubs/h1/categories")
    #expect(response.status == 200)
    let tree = try response.json(as: Tree.self)
    #expect(tree.hub == "h1" && tree.categories.count == DemoCatalogue.sections.count)
    #expect(tree.categories.reduce(0) { $0 + 1 + $1.children.count } >= 35)
    #expect(tree.categories[0].image == DemoCatalogue.categoryImage(tree.categories[0].id))
    #expect(response.headers["Cache-Control"] == "public, max-age=300")
    let tag = try #require(response.headers["ETag"])
    let again = await fixture.client.get(
      "/v1/hubs/h1/categories", headers: ["If-None-Match": "\"x\", W/\(tag)"])
    #expect(again.status == 304 && again.body.isEmpty && again.headers["ETag"] == tag)
    #expect(
      await fixture.client.get("/v1/hubs/h1/categories", headers: ["If-None-Match": "\"other\""]).status
        == 200)
    #expect(try problem(await fixture.client.get("/v1/hubs/h9/categories")).code == "unknownHub")
  }

  @Test func aCategoryIsPagedOnceThroughInSKUOrderWithItsChildren() async throws {
    let fixture = try Self.fixture()
    let expected = fixture.demo.products.filter {
      DemoCatalogue.tree.subtree(of: "getraenke").contains($0.category ?? "")
    }.map(\.sku).sorted()
    #expect(expected.count > 40)
    let skus = try await pageThrough(fixture, "/v1/hubs/h1/categories/getraenke/products", limit: 7)
    #expect(skus == expected)
    // 20 when no limit is given; the items are the app's products.
    let first = await fixture.client.get("/v1/hubs/h1/categories/getraenke/products")
    #expect(first.headers["Cache-Control"] == "public, max-age=300" && first.headers["ETag"] != nil)
    let page = try first.json(as: Page.self)
    #expect(page.items.count == 20 && page.hub == "h1")
    let product = try #require(fixture.demo.products.first { $0.sku == page.items[0].sku })
    #expect(
      page.items[0]
        == Item(
          sku: product.sku, name: product.name, image: product.image, price: product.price,
          originalPrice: product.originalPrice))
    #expect(!first.bodyString.contains("available"))
  }

  @Test func pagingWhileStaffAddAndMoveProductsNeverRepeatsOrSkipsOneThatStayed() async throws {
    let fixture = try Self.fixture()
    let path = "/v1/hubs/h1/categories/milch/products"
    let before = try await pageThrough(fixture, path, limit: 50)
    #expect(before.count >= 6)
    let first = try (await fixture.client.get(path + "?limit=3")).json(as: Page.self)
    // One shown product and one not yet shown move out; one new product arrives after the cursor.
    for (sku, category) in [(before[1], "butter"), (before[4], "butter"), ("zz-new", "milch")] {
      let response = try await fixture.client.put(
        "/v1/hubs/h1/products/\(sku)",
        json: ProductUpsert(name: "Milch \(sku)", price: eur(129), category: category),
        headers: fixture.staff())
      #expect([200, 201].contains(response.status), "\(response.bodyString)")
    }
    var seen = first.items.map(\.sku)
    var cursor = first.nextCursor
    while let next = cursor {
      let page = try (await fixture.client.get(path + "?limit=3&cursor=\(next)")).json(as: Page.self)
      seen += page.items.map(\.sku)
      cursor = page.nextCursor
    }
    let stayed = before.filter { $0 != before[1] && $0 != before[4] }
    #expect(seen.filter { stayed.contains($0) } == stayed)
    #expect(Set(seen).count == seen.count && seen.contains("zz-new") && !seen.contains(before[4]))
  }

  @Test func badPagesAreRefused() async throws {
    let fixture = try Self.fixture()
    let page = try (await fixture.client.get("/v1/hubs/h1/categories/obst/products?limit=2")).json(
      as: Page.self)
    let cursor = try #require(page.nextCursor)
    let h2Cursor = try #require(
      try (await fixture.client.get("/v1/hubs/h2/categories/obst/products?limit=2")).json(as: Page.self)
        .nextCursor)
    let tampered = String(cursor.dropLast()) + (cursor.last == "A" ? "B" : "A")
    for (target, status, code) in [
      ("/v1/hubs/h1/categories/gemuese/products?cursor=\(cursor)", 400, "invalidCursor"),
      ("/v1/hubs/h1/categories/obst/products?cursor=\(h2Cursor)", 400, "invalidCursor"),
      ("/v1/hubs/h1/categories/obst/products?cursor=\(tampered)", 400, "invalidCursor"),
      ("/v1/hubs/h1/categories/obst/products?cursor=", 400, "invalidCursor"),
      ("/v1/hubs/h1/categories/obst/products?limit=0", 400, "invalidLimit"),
      ("/v1/hubs/h1/categories/obst/products?limit=51", 400, "invalidLimit"),
      ("/v1/hubs/h1/categories/obst/products?limit=ten", 400, "invalidLimit"),
      ("/v1/hubs/h1/categories/nope/products", 404, "unknownCategory"),
      ("/v1/hubs/h9/categories/obst/products", 404, "unknownHub"),
    ] {
      let response = await fixture.client.get(target)
      #expect(response.status == status, "\(target): \(response.bodyString)")
      #expect(try problem(response).code == code, "\(target)")
    }
    // The same cursor still works where it belongs.
    #expect(await fixture.client.get("/v1/hubs/h1/categories/obst/products?cursor=\(cursor)").status == 200)
  }

  @Test func staffReplaceTheTreeAndTheChangeIsSeenAtOnce() async throws {
    let fixture = try Self.fixture()
    _ = await fixture.client.get("/v1/hubs/h1/categories")
    let body = CategoriesBody(categories: [
      Category(id: "getraenke", name: "Drinks", children: [Category(id: "wasser", name: "Water")])
    ])
    let response = try await fixture.client.put(
      "/v1/hubs/h1/categories", json: body, headers: fixture.staff())
    #expect(response.status == 200, "\(response.bodyString)")
    let tree = try response.json(as: Tree.self)
    #expect(tree.categories.map(\.id) == ["getraenke"] && tree.categories[0].children.map(\.id) == ["wasser"])
    #expect(
      try (await fixture.client.get("/v1/hubs/h1/categories")).json(as: Tree.self).categories.count == 1)
    // A product whose category left the tree is listed nowhere; the others still are.
    #expect(
      try problem(await fixture.client.get("/v1/hubs/h1/categories/obst/products")).code == "unknownCategory")
    let water = try await pageThrough(fixture, "/v1/hubs/h1/categories/getraenke/products", limit: 50)
    #expect(
      !water.isEmpty
        && water.allSatisfy { sku in fixture.demo.products.first { $0.sku == sku }?.category == "wasser" })
    // Search indexes the new names.
    let found = try (await fixture.client.get("/v1/hubs/h1/search?q=water&limit=50")).json(as: Page.self)
    #expect(found.items.count == min(50, water.count))
    // h2 keeps its own tree.
    #expect(try (await fixture.client.get("/v1/hubs/h2/categories")).json(as: Tree.self).categories.count > 1)
    let events = try fixture.outbox().filter { $0.type == StockEventType.catalogueChanged }
    #expect(events.last?.subject == "catalogue/h1")
  }

  @Test func treeWritesAreRefusedToStrangersAndForBadTrees() async throws {
    let fixture = try Self.fixture()
    let good = CategoriesBody(categories: [Category(id: "a", name: "A")])
    let customer = ["Authorization": "Bearer " + StockFixture.token("u1", clock: fixture.clock)]
    for (headers, hub, status) in [
      ([:], "h1", 401), (customer, "h1", 403), (fixture.staff(["h2"]), "h1", 403),
      (fixture.staff(["h9"]), "h9", 404),
    ] {
      let response = try await fixture.client.put("/v1/hubs/\(hub)/categories", json: good, headers: headers)
      #expect(response.status == status, "\(response.bodyString)")
    }
    let duplicate = CategoriesBody(categories: [Category(id: "a", name: "A"), Category(id: "a", name: "B")])
    let refused = try await fixture.client.put(
      "/v1/hubs/h1/categories", json: duplicate, headers: fixture.staff())
    #expect(refused.status == 422)
    #expect(try problem(refused).code == "invalidCategories")
    let malformed = await fixture.client.send(
      "PUT", "/v1/hubs/h1/categories",
      headers: fixture.staff().merging(["Content-Type": "application/json"]) { $1 },
      body: #"{"categories": [{"id": "a"}"#)
    #expect(malformed.status == 400)
    #expect(try problem(malformed).code == "malformedJSON")
    let missing = await fixture.client.send(
      "PUT", "/v1/hubs/h1/categories",
      headers: fixture.staff().merging(["Content-Type": "application/json"]) { $1 },
      body: #"{"categories": [{"id": "a"}]}"#)
    #expect(missing.status == 400)
    #expect(try problem(missing).code == "missingField")
  }

  // MARK: Products

  @Test func staffSetCatalogueFieldsWithTheProduct() async throws {
    let fixture = try Self.fixture()
    let upsert = ProductUpsert(
      name: "Haferdrink Spezial 1 l", price: eur(199), originalPrice: eur(249), brand: "Oatly",
      category: "pflanzendrinks",
      image: ProductImage(url: "/images/products/pflanzendrinks.png", width: 400, height: 400))
    let saved = try await fixture.client.put(
      "/v1/hubs/h1/products/a-special", json: upsert, headers: fixture.staff())
    #expect(saved.status == 201, "\(saved.bodyString)")
    #expect(
      saved.bodyString.contains(#""category":"pflanzendrinks""#)
        && saved.bodyString.contains(#""brand":"Oatly""#))
    let page = try await pageThrough(fixture, "/v1/hubs/h1/categories/pflanzendrinks/products", limit: 50)
    #expect(page.contains("a-special"))
    let offers = try (await fixture.client.get("/v1/hubs/h1/home?sections=products")).json(as: Home.self)
    #expect(
      offers.sections.first { $0.id == "offers" }?.items.contains { $0["sku"] == .string("a-special") }
        == true)
    for (body, code) in [
      (ProductUpsert(name: "X", price: eur(199), category: "nope"), "unknownCategory"),
      (ProductUpsert(name: "X", price: eur(199), originalPrice: eur(199)), "invalidPrice"),
      (
        ProductUpsert(name: "X", price: eur(199), image: ProductImage(url: "/x.png", width: 0, height: 1)),
        "invalidImage"
      ),
    ] {
      let response = try await fixture.client.put(
        "/v1/hubs/h1/products/a-special", json: body, headers: fixture.staff())
      #expect(response.status == 422, "\(response.bodyString)")
      #expect(try problem(response).code == code, "\(response.bodyString)")
    }
    // Refused writes changed nothing.
    #expect(
      try await pageThrough(fixture, "/v1/hubs/h1/categories/pflanzendrinks/products", limit: 50).contains(
        "a-special"))
  }

  // MARK: Home

  @Test func theHomeFollowsStaffsLayoutAndTheClientsSectionTypes() async throws {
    let fixture = try Self.fixture()
    let response = await fixture.client.get("/v1/hubs/h1/home?sections=banners,categories,products,buyAgain")
    #expect(response.status == 200)
    #expect(
      response.headers["Cache-Control"]?.hasPrefix("private") == true && response.headers["ETag"] != nil)
    let home = try response.json(as: Home.self)
    #expect(home.hub == "h1")
    #expect(home.sections.map(\.id) == ["banners", "categories", "offers", "fruit", "drinks"])
    #expect(home.sections.allSatisfy { !$0.items.isEmpty })
    #expect(!response.bodyString.contains("available"))
    let tag = try #require(response.headers["ETag"])
    #expect(
      await fixture.client.get(
        "/v1/hubs/h1/home?sections=banners,categories,products,buyAgain", headers: ["If-None-Match": tag]
      )
      .status == 304)
    // Only what the client draws; names it does not know of are ignored.
    let older = try (await fixture.client.get("/v1/hubs/h1/home?sections=products,stories")).json(
      as: Home.self)
    #expect(older.sections.map(\.type) == ["products", "products", "products"])
    #expect(try (await fixture.client.get("/v1/hubs/h1/home?sections=")).json(as: Home.self).sections.isEmpty)
    #expect(try problem(await fixture.client.get("/v1/hubs/h9/home")).code == "unknownHub")
  }

  @Test func aKeptHomeShowsTheHubClosingWhenItCloses() async throws {
    let fixture = try Self.fixture()
    // h1 is open 07:00-23:00 in Berlin: from noon, a minute at a time, until it closes.
    fixture.clock.set(date("2026-12-07T11:00:00Z"))
    let open = try (await fixture.client.get("/v1/hubs/h1/home")).json(as: Home.self)
    #expect(open.hours.isOpen)
    let closesAt = try #require(open.hours.closesAt)
    fixture.clock.set(closesAt - 30)
    #expect(try (await fixture.client.get("/v1/hubs/h1/home")).json(as: Home.self).hours.isOpen)
    fixture.clock.set(closesAt + 1)
    let closed = try (await fixture.client.get("/v1/hubs/h1/home")).json(as: Home.self)
    #expect(!closed.hours.isOpen && closed.hours.opensAt != nil)
    #expect(closed.sections.count == open.sections.count)
  }

  @Test func buyAgainIsTheSignedInCustomersMostOrderedProducts() async throws {
    let fixture = try Self.fixture()
    let skus = Array(fixture.demo.products.map(\.sku).prefix(3))
    func confirm(_ order: String, _ user: String, _ lines: [(SKU, Int)]) throws {
      _ = try fixture.app.commands.applyOrderOutcome(
        .confirmed, orderId: order, hub: "h1", messageID: "m-\(order)", consumer: "test", correlationID: nil,
        purchase: (user, lines.map { OrderOutcome.Line(sku: $0.0, quantity: $0.1) }))
    }
    try confirm("o1", "u1", [(skus[0], 1), (skus[1], 5)])
    try confirm("o2", "u1", [(skus[0], 1), ("unknown-sku", 1)])
    // The same event again (redelivered) counts once.
    try confirm("o2", "u1", [(skus[0], 1), ("unknown-sku", 1)])
    try confirm("o3", "u2", [(skus[2], 1)])
    // An order naming a product on two lines counts once, with both quantities.
    func popularity(_ sku: SKU) throws -> Int64 {
      try fixture.app.store.database.read {
        try $0.queryOne("SELECT popularity FROM products WHERE hub = 'h1' AND sku = ?", sku)?.int64(0) ?? -1
      }
    }
    let before = try popularity(skus[2])
    try confirm("o4", "u2", [(skus[2], 2), (skus[1], 1), (skus[2], 3)])
    let after = try popularity(skus[2])
    #expect(after == before + 5)
    let bought = try fixture.app.store.database.read { db in
      try db.query(
        "SELECT sku, orders, quantity FROM purchases WHERE hub = 'h1' AND user_id = 'u2' ORDER BY sku"
      ).map { "\(try $0.string(0)) \(try $0.int(1)) \(try $0.int(2))" }
    }
    #expect(bought == ["\(skus[1]) 1 1", "\(skus[2]) 2 6"].sorted())
    let u1 = ["Authorization": "Bearer " + StockFixture.token("u1", clock: fixture.clock)]
    let home = try (await fixture.client.get("/v1/hubs/h1/home", headers: u1)).json(as: Home.self)
    let again = try #require(home.sections.first { $0.type == "buyAgain" })
    #expect(again.id == "buy-again" && home.sections[1].id == "buy-again")
    #expect(again.items.compactMap { $0["sku"] } == [.string(skus[0]), .string(skus[1])])
    #expect(
      try fixture.app.store.mostOrdered(hub: "h1", user: "u1", limit: 10) == [
        skus[0], skus[1], "unknown-sku",
      ])
    // Anonymous, a new customer, another hub, or a client that does not draw it: no buy again.
    let newcomer = ["Authorization": "Bearer " + StockFixture.token("u9", clock: fixture.clock)]
    for (path, headers) in [
      ("/v1/hubs/h1/home", [:]), ("/v1/hubs/h1/home", newcomer), ("/v1/hubs/h2/home", u1),
      ("/v1/hubs/h1/home?sections=products", u1),
    ] {
      let other = try (await fixture.client.get(path, headers: headers)).json(as: Home.self)
      #expect(!other.sections.contains { $0.type == "buyAgain" }, "\(path)")
    }
    // A stale or broken token is ignored on this public page.
    let broken = await fixture.client.get("/v1/hubs/h1/home", headers: ["Authorization": "Bearer nope"])
    #expect(broken.status == 200)
  }

  @Test func staffArrangeTheHomeAndItTakesEffectAtOnce() async throws {
    let fixture = try Self.fixture()
    _ = await fixture.client.get("/v1/hubs/h1/home")
    let sku = fixture.demo.products[0].sku
    let layout = HomeLayoutBody(sections: [
      HomeSection(id: "picks", type: .products, title: " Our picks ", source: .skus(["missing", sku])),
      HomeSection(id: "gone", type: .products, title: "Gone", source: .skus(["missing"])),
    ])
    let response = try await fixture.client.put("/v1/hubs/h1/home", json: layout, headers: fixture.staff())
    #expect(response.status == 200, "\(response.bodyString)")
    #expect(response.bodyString.contains(#""title":"Our picks""#))
    let home = try (await fixture.client.get("/v1/hubs/h1/home")).json(as: Home.self)
    #expect(home.sections.map(\.id) == ["picks"])
    #expect(home.sections[0].items.compactMap { $0["sku"] } == [.string(sku)])
    #expect(try (await fixture.client.get("/v1/hubs/h2/home")).json(as: Home.self).sections.count == 5)
    #expect(
      try fixture.outbox().contains {
        $0.type == StockEventType.catalogueChanged && $0.subject == "catalogue/h1"
      })

    let customer = ["Authorization": "Bearer " + StockFixture.token("u1", clock: fixture.clock)]
    for (headers, hub, status) in [
      ([:], "h1", 401), (customer, "h1", 403), (fixture.staff(["h2"]), "h1", 403),
      (fixture.staff(["h9"]), "h9", 404),
    ] {
      #expect(
        try await fixture.client.put("/v1/hubs/\(hub)/home", json: layout, headers: headers).status == status)
    }
    let json = fixture.staff().merging(["Content-Type": "application/json"]) { $1 }
    for (body, status, code) in [
      (#"{"sections":[{"id":"a","type":"stories"}]}"#, 422, "invalidLayout"),
      (#"{"sections":[{"id":"a","type":"products"}]}"#, 422, "invalidLayout"),
      (#"{"sections":[{"id":"a","type":"buyAgain"}],"theme":"dark"}"#, 400, "unknownField"),
      (#"{"sections":"#, 400, "malformedJSON"),
      (#"{"sections":{}}"#, 400, "wrongType"),
    ] {
      let refused = await fixture.client.send("PUT", "/v1/hubs/h1/home", headers: json, body: body)
      #expect(refused.status == status, "\(body): \(refused.bodyString)")
      #expect(try problem(refused).code == code, "\(body): \(refused.bodyString)")
    }
  }

  // MARK: Search

  @Test func searchFindsPrefixesWithoutCaseOrDiacritics() async throws {
    let fixture = try Self.fixture()
    func names(_ query: String) async throws -> [String] {
      let response = await fixture.client.get("/v1/hubs/h1/search?q=\(query)&limit=50")
      try #require(response.status == 200, "\(response.bodyString)")
      return try response.json(as: Page.self).items.map(\.name)
    }
    let hafer = try await names("hafer")
    #expect(!hafer.isEmpty && hafer.allSatisfy { $0.contains("Haferdrink") })
    let muesli = try await names("m%C3%BCsli")
    #expect(!muesli.isEmpty && muesli.allSatisfy { $0.contains("Müsli") })
    #expect(try await names("MUSLI") == muesli)
    // Every word must match; brand and category names count.
    let oatly = try await names("oatly%20barista")
    #expect(!oatly.isEmpty && oatly.allSatisfy { $0.contains("Oatly") && $0.contains("Barista") })
    let drinks = try await names("pflanzendrinks")
    #expect(Set(drinks) == Set(hafer.count == 50 ? drinks : hafer))
    #expect(try await names("xyzzy").isEmpty)
  }

  @Test func searchPagesAndRanksTiesByPopularity() async throws {
    let fixture = try Self.fixture()
    let all = try await pageThrough(fixture, "/v1/hubs/h1/search?q=bier", limit: 50)
    let paged = try await pageThrough(fixture, "/v1/hubs/h1/search?q=bier", limit: 7)
    #expect(all.count > 10 && paged == all && Set(all).count == all.count)
    // Products that match alike: the most ordered comes first.
    let last = try #require(all.last)
    _ = try fixture.app.commands.applyOrderOutcome(
      .confirmed, orderId: "o1", hub: "h1", messageID: "m1", consumer: "test", correlationID: nil,
      purchase: ("u1", [OrderOutcome.Line(sku: last, quantity: 30)]))
    // Popularity raises no event: it reaches search when the hub's snapshot is built again.
    let kept = try await pageThrough(fixture, "/v1/hubs/h1/search?q=bier", limit: 50)
    #expect(kept == all)
    fixture.clock.advance(by: CatalogueMemory().maximumAge + 1)
    let ranked = try await pageThrough(fixture, "/v1/hubs/h1/search?q=Bier", limit: 50)
    #expect(Set(ranked) == Set(all))
    #expect(ranked.firstIndex(of: last)! < all.firstIndex(of: last)!)
  }

  @Test func badSearchesAreRefused() async throws {
    let fixture = try Self.fixture()
    let cursor = try #require(
      try (await fixture.client.get("/v1/hubs/h1/search?q=bier&limit=2")).json(as: Page.self).nextCursor)
    let categoryCursor = try #require(
      try (await fixture.client.get("/v1/hubs/h1/categories/bier/products?limit=2")).json(as: Page.self)
        .nextCursor)
    for (target, status, code) in [
      ("/v1/hubs/h1/search", 400, "invalidQuery"),
      ("/v1/hubs/h1/search?q=", 400, "invalidQuery"),
      ("/v1/hubs/h1/search?q=%22%2A", 400, "invalidQuery"),
      ("/v1/hubs/h1/search?q=" + String(repeating: "a", count: 101), 400, "invalidQuery"),
      ("/v1/hubs/h1/search?q=bier&limit=99", 400, "invalidLimit"),
      ("/v1/hubs/h1/search?q=wein&cursor=\(cursor)", 400, "invalidCursor"),
      ("/v1/hubs/h2/search?q=bier&cursor=\(cursor)", 400, "invalidCursor"),
      ("/v1/hubs/h1/search?q=bier&cursor=\(categoryCursor)", 400, "invalidCursor"),
      ("/v1/hubs/h9/search?q=bier", 404, "unknownHub"),
    ] {
      let response = await fixture.client.get(target)
      #expect(response.status == status, "\(target): \(response.bodyString)")
      #expect(try problem(response).code == code, "\(target)")
    }
    // The cursor works for the same words, however they are spelled.
    #expect(await fixture.client.get("/v1/hubs/h1/search?q=%20BIER&cursor=\(cursor)").status == 200)
  }
}
