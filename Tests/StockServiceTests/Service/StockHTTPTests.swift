import Foundation
import GrocerContracts
import GrocerCore
import GrocerHTTP
import Testing

@testable import StockService

/// StockService's HTTP API driven in-process (no sockets, no broker): replies, errors, and
/// what each write leaves in the database and the outbox.
@Suite struct StockHTTPTests {
  @Test func stockLookupAnswersCountsAndLeavesUnknownSKUsOut() async throws {
    let fixture = try StockFixture()
    let sku = fixture.sku()
    let response = await fixture.client.get("/v1/hubs/h1/stock?ids=\(sku),nope1")
    #expect(response.status == 200)
    #expect(response.headers["Content-Type"]?.hasPrefix("application/json") == true)
    #expect(response.headers["Cache-Control"] == "max-age=30")
    let body = try response.json(as: StockBody.self)
    #expect(body.stock == [sku: fixture.demo.counts["h1"]![sku]!])
    #expect(body.asOf == Timestamp.string(from: fixture.clock.now()))
  }

  @Test func aCachedCountIsServedForThirtySecondsThenReadAgain() async throws {
    let fixture = try StockFixture()
    let sku = fixture.sku()
    let before = try await fixture.stock("h1", [sku])[sku]!
    // A change that bypasses this replica (no event reaches it in this test).
    try fixture.app.store.database.write { db in
      try db.execute("UPDATE products SET on_hand = 777 WHERE hub = 'h1' AND sku = ?", sku)
    }
    fixture.clock.advance(by: 20)
    #expect(try await fixture.stock("h1", [sku])[sku] == before)
    let aging = await fixture.client.get("/v1/hubs/h1/stock?ids=\(sku)")
    #expect(aging.headers["Cache-Control"] == "max-age=10")
    fixture.clock.advance(by: 10)
    #expect(try await fixture.stock("h1", [sku])[sku] == 777)
  }

  @Test func asOfIsTheOldestReadInTheReply() async throws {
    let fixture = try StockFixture()
    let first = fixture.demo.products[0].sku
    let second = fixture.demo.products[1].sku
    let start = fixture.clock.now()
    _ = try await fixture.stock("h1", [first])
    fixture.clock.advance(by: 12)
    let response = await fixture.client.get("/v1/hubs/h1/stock?ids=\(first),\(second)")
    #expect(try response.json(as: StockBody.self).asOf == Timestamp.string(from: start))
    #expect(response.headers["Cache-Control"] == "max-age=18")
  }

  @Test(arguments: [
    ("/v1/hubs/h1/stock", 400, "missingIds"),
    ("/v1/hubs/h1/stock?ids=", 400, "missingIds"),
    ("/v1/hubs/h1/stock?ids=a,,b", 400, "invalidSKU"),
    ("/v1/hubs/h1/stock?ids=" + (1...101).map { "p\($0)" }.joined(separator: ","), 400, "tooManyIds"),
    ("/v1/hubs/h1/stock?ids=bad%20id", 400, "invalidSKU"),
    ("/v1/hubs/nowhere/stock?ids=p00001", 404, "unknownHub"),
    ("/v1/hubs/h1/products?limit=500", 400, "invalidLimit"),
    ("/v1/hubs/h1/products/p99999", 404, "unknownProduct"),
    ("/v1/hubs/nowhere", 404, "unknownHub"),
  ])
  func badReadsGetAClearProblem(target: String, status: Int, code: String) async throws {
    let fixture = try StockFixture()
    let response = await fixture.client.get(target)
    #expect(response.status == status, "\(target): \(response.bodyString)")
    #expect(response.headers["Content-Type"] == "application/problem+json")
    #expect(try response.json(as: ProblemBody.self).code == code)
  }

  @Test func productsArePagedWithACursor() async throws {
    let fixture = try StockFixture(productsPerHub: 30)
    let first = await fixture.client.get("/v1/hubs/h2/products?limit=20")
    struct Page: Decodable {
      struct Item: Decodable {
        var sku: String
        var available: Int
        var price: Money
      }
      var items: [Item]
      var next: String?
    }
    let page = try first.json(as: Page.self)
    #expect(page.items.count == 20)
    #expect(page.next == page.items.last?.sku)
    let second = try await fixture.client.get("/v1/hubs/h2/products?limit=20&after=\(page.next!)").json(
      as: Page.self)
    #expect(second.items.count == 10)
    #expect(second.next == nil)
    #expect(Set(page.items.map(\.sku)).isDisjoint(with: second.items.map(\.sku)))
  }

  /// Found by schemathesis: the last page left `next` out, while the document makes it required.
  @Test func theLastPageSaysNextIsNull() async throws {
    let fixture = try StockFixture(productsPerHub: 3)
    let response = await fixture.client.get("/v1/hubs/h2/products?limit=20")
    #expect(response.status == 200)
    let body = try #require(try JSONSerialization.jsonObject(with: Data(response.body)) as? [String: Any])
    #expect((body["items"] as? [Any])?.count == 3)
    #expect(body.keys.contains("next"))
    #expect(body["next"] is NSNull)
  }

  @Test func aHubShowsItsHoursAndPricing() async throws {
    let fixture = try StockFixture()
    let response = await fixture.client.get("/v1/hubs/h1")
    #expect(response.status == 200)
    let body = try #require(try JSONSerialization.jsonObject(with: Data(response.body)) as? [String: Any])
    #expect(body["hub"] as? String == "h1")
    let hours = try #require(body["hours"] as? [String: Any])
    #expect(hours["isOpen"] is Bool)
    let pricing = try #require(body["pricing"] as? [String: Any])
    #expect(pricing["minimumOrder"] != nil && pricing["deliveryFee"] != nil)
  }

  // MARK: Staff writes

  @Test func aStockTakeChangesTheCountAndPublishesStockChanged() async throws {
    let fixture = try StockFixture()
    let sku = fixture.sku()
    _ = try await fixture.stock("h1", [sku])  // warm the cache
    let eventsBefore = try fixture.outbox().count
    let response = try await fixture.client.put(
      "/v1/hubs/h1/stock/\(sku)", json: ["available": 3],
      headers: fixture.staff().merging(["X-Request-ID": "req-take-1"]) { $1 })
    #expect(response.status == 200, "\(response.bodyString)")
    #expect(try await fixture.stock("h1", [sku])[sku] == 3)
    let events = try fixture.outbox()
    #expect(events.count == eventsBefore + 1)
    let event = try #require(events.last)
    #expect(event.type == "stock.changed")
    #expect(event.subject == "stock/h1/\(sku)")
    #expect(event.correlationId == "req-take-1")
    #expect(try event.payload(as: StockChanged.self).available == 3)
    #expect(event.sequence == 2)
    // The same stock take again changes nothing and publishes nothing.
    let again = try await fixture.client.put(
      "/v1/hubs/h1/stock/\(sku)", json: ["available": 3], headers: fixture.staff())
    #expect(again.status == 200)
    #expect(try fixture.outbox().count == eventsBefore + 1)
  }

  @Test func anAdjustmentMovesTheCountAndCannotGoBelowZero() async throws {
    let fixture = try StockFixture()
    let sku = fixture.sku(minimum: 5)
    let start = fixture.demo.counts["h1"]![sku]!
    let damaged = try await fixture.client.post(
      "/v1/hubs/h1/stock/\(sku)/adjustments", json: Adjustment(delta: -2, reason: "damaged"),
      headers: fixture.staff())
    #expect(damaged.status == 200, "\(damaged.bodyString)")
    #expect(try await fixture.stock("h1", [sku])[sku] == start - 2)
    let eventsBefore = try fixture.outbox().count
    let tooMany = try await fixture.client.post(
      "/v1/hubs/h1/stock/\(sku)/adjustments", json: Adjustment(delta: -(start + 10), reason: "lost"),
      headers: fixture.staff())
    #expect(tooMany.status == 422)
    #expect(try tooMany.json(as: ProblemBody.self).code == "countWouldGoNegative")
    #expect(try fixture.outbox().count == eventsBefore)
    #expect(try await fixture.stock("h1", [sku])[sku] == start - 2)
  }

  @Test func staffCreateAndChangeAProduct() async throws {
    let fixture = try StockFixture()
    let body = ProductBody(name: "Hafermilch 1 l", price: Money(minorUnits: 199))
    let created = try await fixture.client.put(
      "/v1/hubs/h1/products/oat-1", json: body, headers: fixture.staff())
    #expect(created.status == 201, "\(created.bodyString)")
    let changed = try await fixture.client.put(
      "/v1/hubs/h1/products/oat-1", json: ProductBody(name: "Hafermilch 1 l", price: Money(minorUnits: 219)),
      headers: fixture.staff())
    #expect(changed.status == 200)
    let product = try fixture.app.store.product(hub: "h1", sku: "oat-1")
    #expect(product?.product.price.minorUnits == 219)
    #expect(product?.version == 2)
    let events = try fixture.outbox().filter { $0.subject == "stock/h1/oat-1" }
    #expect(events.map(\.sequence) == [1, 2])
  }

  @Test func staffCreateAHubThatIsUsableAtOnce() async throws {
    let fixture = try StockFixture()
    let hub = """
      {"name":"Neukölln","currency":"EUR",
       "hours":{"timeZone":"Europe/Berlin","weekly":[{"day":"mon","opens":"08:00","closes":"22:00"}]},
       "pricing":{"minimumOrder":{"minorUnits":1000,"currency":"EUR"},"deliveryFee":{"minorUnits":199,"currency":"EUR"},
                  "freeDeliveryFrom":null,"smallBasket":null}}
      """
    let created = await fixture.client.send(
      "PUT", "/v1/hubs/h9",
      headers: fixture.staff(["*"]).merging(["Content-Type": "application/json"]) { $1 },
      body: hub)
    #expect(created.status == 201, "\(created.bodyString)")
    #expect(await fixture.client.get("/v1/hubs/h9").status == 200)
    #expect(await fixture.client.get("/v1/hubs/h9/stock?ids=p00001").status == 200)
    #expect(try fixture.outbox().last?.type == "hub.changed")
  }

  // MARK: Bad writes change nothing

  @Test func writesWithoutAValidStaffTokenAreRefused() async throws {
    let fixture = try StockFixture()
    let sku = fixture.sku()
    let target = "/v1/hubs/h1/stock/\(sku)"
    let clock = fixture.clock
    let expired = StockFixture.token("s", role: .staff, hubs: ["h1"], clock: clock, ttl: -120)
    let otherKey = StockFixture.token("s", role: .staff, hubs: ["h1"], clock: clock, secret: "another-secret")
    let header = #"{"alg":"none","typ":"JWT"}"#
    let claims = #"{"sub":"s","role":"staff","hubs":["h1"],"exp":9999999999}"#
    let none = [header, claims].map { Data($0.utf8).base64EncodedString() }.joined(separator: ".") + "."
    let cases: [(String?, Int)] = [
      (nil, 401), ("Bearer " + expired, 401), ("Bearer " + otherKey, 401), ("Bearer " + none, 401),
      ("Bearer garbage", 401),
      ("Bearer " + StockFixture.token("u1", clock: clock), 403),
      ("Bearer " + StockFixture.token("s2", role: .staff, hubs: ["h2"], clock: clock), 403),
    ]
    let eventsBefore = try fixture.outbox().count
    for (authorization, status) in cases {
      let headers = authorization.map { ["Authorization": $0] } ?? [:]
      let response = try await fixture.client.put(target, json: ["available": 1], headers: headers)
      #expect(response.status == status, "\(authorization ?? "no token"): \(response.bodyString)")
      if status == 401 { #expect(response.headers["WWW-Authenticate"] == "Bearer") }
      #expect(response.headers["Content-Type"] == "application/problem+json")
    }
    #expect(try fixture.outbox().count == eventsBefore)
    #expect(try fixture.app.store.product(hub: "h1", sku: sku)?.version == 1)
  }

  @Test(
    arguments: [
      (#"{"available": 12"#, "application/json", 400, "malformedJSON"),
      (#"{"available": "12"}"#, "application/json", 400, nil),
      (#"{"available": 2.5}"#, "application/json", 400, nil),
      (#"{"available": -1}"#, "application/json", 422, "invalidCount"),
      (#"{"available": 1, "extra": true}"#, "application/json", 400, "unknownField"),
      (#"{}"#, "application/json", 400, nil),
      (#"available=12"#, "application/x-www-form-urlencoded", 415, nil),
    ] as [(String, String, Int, String?)])
  func badStockTakeBodiesChangeNothing(body: String, contentType: String, status: Int, code: String?)
    async throws
  {
    let fixture = try StockFixture()
    let sku = fixture.sku()
    let eventsBefore = try fixture.outbox().count
    let response = await fixture.client.send(
      "PUT", "/v1/hubs/h1/stock/\(sku)",
      headers: fixture.staff().merging(["Content-Type": contentType]) { $1 },
      body: body)
    #expect(response.status == status, "\(body): \(response.bodyString)")
    if let code { #expect(try response.json(as: ProblemBody.self).code == code) }
    #expect(try fixture.outbox().count == eventsBefore)
  }

  @Test func aTenMegabyteBodyIsRefusedWith413() async throws {
    let fixture = try StockFixture()
    let body = "{\"available\": 1, \"pad\": \"" + String(repeating: "x", count: 10 << 20) + "\"}"
    let response = await fixture.client.send(
      "PUT", "/v1/hubs/h1/stock/\(fixture.sku())",
      headers: fixture.staff().merging(["Content-Type": "application/json"]) { $1 }, body: body)
    #expect(response.status == 413)
  }

  @Test func unknownSKUAndUnknownHubOnWrites() async throws {
    let fixture = try StockFixture()
    let unknownSKU = try await fixture.client.put(
      "/v1/hubs/h1/stock/p99999", json: ["available": 1], headers: fixture.staff())
    #expect(unknownSKU.status == 404)
    #expect(try unknownSKU.json(as: ProblemBody.self).code == "unknownProduct")
    let unknownHub = try await fixture.client.put(
      "/v1/hubs/h7/stock/p00001", json: ["available": 1], headers: fixture.staff(["*"]))
    #expect(unknownHub.status == 404)
  }

  @Test func operationalRoutesAnswer() async throws {
    let fixture = try StockFixture()
    #expect(await fixture.client.get("/health/live").status == 200)
    _ = try await fixture.stock("h1", [fixture.sku()])
    let metrics = await fixture.client.get("/metrics")
    #expect(metrics.bodyString.contains(#"route="/v1/hubs/{hub}/stock""#))
    // Not started: no broker connection, so not ready.
    let ready = await fixture.client.get("/health/ready")
    #expect(ready.status == 503)
    #expect(ready.headers["Retry-After"] != nil)
  }
}

struct Adjustment: Encodable {
  var delta: Int
  var reason: String
}

struct ProductBody: Encodable {
  var name: String
  var price: Money
}

@Suite struct StockReplyMemoryTests {
  @Test func aRepeatedLookupIsAnsweredFromTheRememberedReply() async throws {
    let fixture = try StockFixture()
    let sku = fixture.sku()
    let first = await fixture.client.get("/v1/hubs/h1/stock?ids=\(sku)")
    // The first answer fills the cache, the second is asked of it, the third is remembered whole
    // (only a query asked again is).
    _ = await fixture.client.get("/v1/hubs/h1/stock?ids=\(sku)")
    #expect(
      fixture.app.cache.rememberedReply(hub: "h1", query: "ids=\(sku)", now: fixture.clock.now()) == nil)
    _ = await fixture.client.get("/v1/hubs/h1/stock?ids=\(sku)")
    let remembered = fixture.app.cache.rememberedReply(
      hub: "h1", query: "ids=\(sku)", now: fixture.clock.now())
    #expect(remembered?.body == first.body)
  }
}
