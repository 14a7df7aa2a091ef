import Foundation
import GrocerCore
import GrocerHTTP
import Testing

@testable import StockService

/// Address to hub over HTTP: staff set each hub's delivery area, the app asks which hub serves a
/// point; every refusal a caller can reach.
@Suite struct DeliveryAreaHTTPTests {
  struct Answer: Decodable, Equatable {
    var status: String
    var hub: String?
  }

  /// A GeoJSON Polygon: the square from (lng, lat) with side `size`.
  static func square(_ lng: Double, _ lat: Double, _ size: Double) -> JSONValue {
    let corners = [(lng, lat), (lng + size, lat), (lng + size, lat + size), (lng, lat + size), (lng, lat)]
    return .object([
      "type": .string("Polygon"),
      "coordinates": .array([.array(corners.map { .array([.number($0.0), .number($0.1)]) })]),
    ])
  }

  func setArea(
    _ fixture: StockFixture, _ hub: String, _ area: JSONValue, priority: Int? = nil, staffOf: [String]? = nil
  ) async throws -> HTTPResponse {
    var body: [String: JSONValue] = ["area": area]
    if let priority { body["priority"] = .number(Double(priority)) }
    return try await fixture.client.put(
      "/v1/hubs/\(hub)/delivery-area", json: JSONValue.object(body), headers: fixture.staff(staffOf ?? [hub]))
  }

  func ask(_ fixture: StockFixture, _ query: String) async throws -> (HTTPResponse, Answer?) {
    let response = await fixture.client.get("/v1/delivery-area\(query)")
    return (response, response.status == 200 ? try response.json(as: Answer.self) : nil)
  }

  @Test func aPointIsServedByTheHubWhoseAreaHoldsItAndPriorityDecidesOverlaps() async throws {
    let fixture = try StockFixture()
    // The demo's hubs serve three Berlin districts: h1 wins where it overlaps h3, Görlitzer Park
    // is a hole in h2's, Potsdam is nobody's.
    #expect(try await ask(fixture, "?lat=52.529&lng=13.401").1 == Answer(status: "served", hub: "h1"))
    #expect(try await ask(fixture, "?lat=52.5155&lng=13.454").1 == Answer(status: "served", hub: "h3"))
    #expect(try await ask(fixture, "?lat=52.528&lng=13.45").1 == Answer(status: "served", hub: "h1"))
    #expect(try await ask(fixture, "?lat=52.49&lng=13.40").1 == Answer(status: "served", hub: "h2"))
    #expect(try await ask(fixture, "?lat=52.4965&lng=13.437").1 == Answer(status: "outOfArea", hub: nil))
    #expect(try await ask(fixture, "?lat=52.40&lng=13.06").1 == Answer(status: "outOfArea", hub: nil))
    let (empty, nobody) = try await ask(fixture, "?lat=10.529&lng=100.401")
    #expect(empty.headers["Cache-Control"] == "private, max-age=60")
    #expect(nobody == Answer(status: "outOfArea", hub: nil))

    let set = try await setArea(fixture, "h1", Self.square(100.3, 10.4, 0.2))
    #expect(set.status == 200)
    let view = try set.json(as: DeliveryAreaReply.self)
    #expect(view.hub == "h1" && view.priority == 0 && view.area == Self.square(100.3, 10.4, 0.2))
    #expect(try await setArea(fixture, "h2", Self.square(100.0, 10.0, 1.0)).status == 200)

    // Inside both: h1's area is nearer. On h1's border: still h1. Only in h2's: h2. Neither: out.
    #expect(try await ask(fixture, "?lat=10.529&lng=100.401").1 == Answer(status: "served", hub: "h1"))
    #expect(try await ask(fixture, "?lat=10.5&lng=100.3").1 == Answer(status: "served", hub: "h1"))
    #expect(try await ask(fixture, "?lat=10.1&lng=100.1").1 == Answer(status: "served", hub: "h2"))
    #expect(try await ask(fixture, "?lat=48.1&lng=101.5").1 == Answer(status: "outOfArea", hub: nil))
    // A higher priority wins the overlap.
    #expect(try await setArea(fixture, "h2", Self.square(100.0, 10.0, 1.0), priority: 5).status == 200)
    #expect(try await ask(fixture, "?lat=10.529&lng=100.401").1 == Answer(status: "served", hub: "h2"))

    // Without a point: browse the default hub.
    let (browse, browsing) = try await ask(fixture, "")
    #expect(browse.headers["Cache-Control"] == "private, max-age=60")
    #expect(browsing == Answer(status: "browsing", hub: fixture.configuration.defaultHub))

    // The areas are stored: a replica on the same database answers the same.
    let replica = try StockFixture(
      dataDirectory: fixture.configuration.dataDirectory, sharing: fixture.location)
    #expect(try await ask(replica, "?lat=10.529&lng=100.401").1 == Answer(status: "served", hub: "h2"))
  }

  @Test(arguments: [
    ("?lat=52.5", "invalidCoordinates"), ("?lng=13.4", "invalidCoordinates"),
    ("?lat=abc&lng=13.4", "invalidCoordinates"), ("?lat=91&lng=13.4", "invalidCoordinates"),
    ("?lat=52.5&lng=-181", "invalidCoordinates"), ("?lat=nan&lng=1", "invalidCoordinates"),
  ])
  func badCoordinatesAreRefused(query: String, code: String) async throws {
    let fixture = try StockFixture()
    let (response, _) = try await ask(fixture, query)
    #expect(response.status == 400)
    #expect(try response.json(as: ProblemBody.self).code == code)
  }

  @Test func settingAnAreaRefusesStrangersBadBodiesAndBadGeometry() async throws {
    let fixture = try StockFixture()
    let area = JSONValue.object(["area": Self.square(100.3, 10.4, 0.2)])
    // No token, a customer, staff of another hub.
    #expect(try await fixture.client.put("/v1/hubs/h1/delivery-area", json: area).status == 401)
    let customer = [
      "Authorization": "Bearer " + StockFixture.token("c1", hubs: ["h1"], clock: fixture.clock)
    ]
    #expect(
      try await fixture.client.put("/v1/hubs/h1/delivery-area", json: area, headers: customer).status == 403)
    #expect(try await setArea(fixture, "h1", Self.square(100.3, 10.4, 0.2), staffOf: ["h2"]).status == 403)
    // An unknown hub.
    let unknown = try await setArea(fixture, "h99", Self.square(100.3, 10.4, 0.2), staffOf: ["*"])
    #expect(unknown.status == 404)
    #expect(try unknown.json(as: ProblemBody.self).code == "unknownHub")
    // Malformed JSON, an unknown field, no area.
    let malformed = await fixture.client.send(
      "PUT", "/v1/hubs/h1/delivery-area",
      headers: fixture.staff().merging(["Content-Type": "application/json"]) { $1 },
      body: "{\"area\": ")
    #expect(malformed.status == 400)
    #expect(try malformed.json(as: ProblemBody.self).code == "malformedJSON")
    let extra = try await fixture.client.put(
      "/v1/hubs/h1/delivery-area",
      json: JSONValue.object(["area": Self.square(0, 0, 1), "radius": .number(3)]),
      headers: fixture.staff())
    #expect(try extra.json(as: ProblemBody.self).code == "unknownField")
    let missing = try await fixture.client.put(
      "/v1/hubs/h1/delivery-area", json: JSONValue.object(["priority": .number(1)]), headers: fixture.staff())
    #expect(try missing.json(as: ProblemBody.self).code == "missingField")
    // A ring that is not closed: 422 naming it; nothing stored.
    let open = JSONValue.object([
      "type": .string("Polygon"),
      "coordinates": .array([
        .array([[0, 0], [1, 0], [1, 1], [0, 1]].map { .array($0.map { .number($0) }) })
      ]),
    ])
    let refused = try await setArea(fixture, "h1", open)
    #expect(refused.status == 422)
    let problem = try refused.json(as: ProblemBody.self)
    #expect(problem.code == "invalidArea")
    #expect(problem.detail.contains("`area.coordinates[0]` is not closed"))
    #expect(try await ask(fixture, "?lat=0.5&lng=0.5").1 == Answer(status: "outOfArea", hub: nil))
    // An area that leaves its point out is refused as a whole, and the one before stays.
    #expect(try await setArea(fixture, "h1", Self.square(100.3, 10.4, 0.2)).status == 200)
    #expect(try await setArea(fixture, "h1", .string("everywhere")).status == 422)
    #expect(try await ask(fixture, "?lat=10.5&lng=100.4").1 == Answer(status: "served", hub: "h1"))
  }
}

/// `PUT /v1/hubs/{hub}/delivery-area`'s reply as the tests read it.
struct DeliveryAreaReply: Decodable {
  var hub: String
  var area: JSONValue
  var priority: Int
}
