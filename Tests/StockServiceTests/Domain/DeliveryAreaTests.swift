import Foundation
import GrocerContracts
import GrocerCore
import Testing

@testable import StockService

/// Delivery areas as GeoJSON: what is refused (and named), what is inside, and which hub wins
/// where areas overlap.
@Suite struct DeliveryAreaTests {
  /// A GeoJSON ring from [longitude, latitude] pairs.
  func ring(_ points: [(Double, Double)]) -> JSONValue {
    .array(points.map { .array([.number($0.0), .number($0.1)]) })
  }

  func polygon(_ rings: [(Double, Double)]...) -> JSONValue {
    .object(["type": .string("Polygon"), "coordinates": .array(rings.map(ring))])
  }

  /// A square from (x, y) with side `size`, closed.
  func square(_ x: Double, _ y: Double, _ size: Double) -> [(Double, Double)] {
    [(x, y), (x + size, y), (x + size, y + size), (x, y + size), (x, y)]
  }

  func area(_ geoJSON: JSONValue, priority: Int = 0) throws -> DeliveryArea {
    try DeliveryArea(geoJSON: geoJSON, priority: priority)
  }

  func refusal(_ geoJSON: JSONValue, priority: Int = 0) -> String? {
    do {
      _ = try DeliveryArea(geoJSON: geoJSON, priority: priority)
      return nil
    } catch {
      #expect(error.code == "invalidArea")
      return error.detail
    }
  }

  @Test func aPointInsideOnTheBorderOrAtACornerIsInAndOneOutsideIsNot() throws {
    let berlin = try area(polygon(square(13.3, 52.4, 0.2)))
    #expect(berlin.contains(GeoPoint(lat: 52.529, lng: 13.401)))
    #expect(berlin.contains(GeoPoint(lat: 52.5, lng: 13.3)))  // on the western edge
    #expect(berlin.contains(GeoPoint(lat: 52.6, lng: 13.5)))  // a corner
    #expect(!berlin.contains(GeoPoint(lat: 52.5, lng: 13.51)))
    #expect(!berlin.contains(GeoPoint(lat: 52.39, lng: 13.4)))
  }

  @Test func aHoleIsOutsideButItsBorderIsIn() throws {
    let ringWithHole = try area(polygon(square(0, 0, 10), square(4, 4, 2)))
    #expect(!ringWithHole.contains(GeoPoint(lat: 5, lng: 5)))
    #expect(ringWithHole.contains(GeoPoint(lat: 5, lng: 4)))
    #expect(ringWithHole.contains(GeoPoint(lat: 2, lng: 2)))
  }

  @Test func aMultiPolygonCoversEachOfItsParts() throws {
    let two = try area(
      .object([
        "type": .string("MultiPolygon"),
        "coordinates": .array([.array([ring(square(0, 0, 1))]), .array([ring(square(5, 5, 1))])]),
      ]))
    #expect(two.contains(GeoPoint(lat: 0.5, lng: 0.5)))
    #expect(two.contains(GeoPoint(lat: 5.5, lng: 5.5)))
    #expect(!two.contains(GeoPoint(lat: 3, lng: 3)))
    #expect(try area(two.geoJSON) == two)
  }

  @Test func aConcaveAreaLeavesItsNotchOut() throws {
    // A U: the notch between its arms is outside.
    let shape = try area(polygon([(0, 0), (3, 0), (3, 3), (2, 3), (2, 1), (1, 1), (1, 3), (0, 3), (0, 0)]))
    #expect(!shape.contains(GeoPoint(lat: 2, lng: 1.5)))
    #expect(shape.contains(GeoPoint(lat: 2, lng: 0.5)))
    #expect(shape.contains(GeoPoint(lat: 0.5, lng: 1.5)))
  }

  @Test func invalidGeometryIsRefusedNamingWhatAndWhere() {
    #expect(refusal(.string("Polygon"))?.contains("GeoJSON object") == true)
    #expect(
      refusal(.object(["type": .string("Point"), "coordinates": ring([(1, 2)])]))?.contains("Point") == true)
    #expect(refusal(.object(["type": .string("Polygon")]))?.contains("coordinates") == true)
    // Unclosed.
    #expect(
      refusal(polygon([(0, 0), (1, 0), (1, 1), (0, 1)]))?.contains("`area.coordinates[0]` is not closed")
        == true)
    // Fewer than 4 positions.
    #expect(refusal(polygon([(0, 0), (1, 0), (0, 0)]))?.contains("has 3 positions") == true)
    // A bow tie crosses itself.
    #expect(
      refusal(polygon([(0, 0), (1, 1), (1, 0), (0, 1), (0, 0)]))?.contains("intersects itself") == true)
    // An edge that folds back onto the one before it.
    #expect(
      refusal(polygon([(0, 0), (2, 0), (1, 0), (1, 1), (0, 0)]))?.contains("intersects itself") == true)
    // Out of range, not numbers, too few distinct corners.
    #expect(refusal(polygon([(0, 0), (181, 0), (1, 1), (0, 0)]))?.contains("[1]` is out of range") == true)
    #expect(refusal(polygon([(0, 0), (1, 0), (1, 95), (0, 0)]))?.contains("out of range") == true)
    #expect(
      refusal(
        .object([
          "type": .string("Polygon"),
          "coordinates": .array([
            .array([
              .array([.string("0"), .number(0)]), .array([.number(1), .number(0)]),
              .array([.number(1), .number(1)]), .array([.string("0"), .number(0)]),
            ])
          ]),
        ]))?.contains("[longitude, latitude]") == true)
    #expect(refusal(polygon([(0, 0), (1, 1), (0, 0), (0, 0)]))?.contains("3 distinct") == true)
    // The second polygon of a MultiPolygon, named as such.
    let multi = JSONValue.object([
      "type": .string("MultiPolygon"),
      "coordinates": .array([
        .array([ring(square(0, 0, 1))]), .array([ring([(5, 5), (6, 5), (6, 6), (5, 6)])]),
      ]),
    ])
    #expect(refusal(multi)?.contains("`area.coordinates[1][0]` is not closed") == true)
    #expect(refusal(polygon(square(0, 0, 1)), priority: 2_000_000)?.contains("priority") == true)
  }

  @Test func whereAreasOverlapTheHigherPriorityWinsThenTheNearerHubThenTheSmallerId() throws {
    let point = GeoPoint(lat: 52.52, lng: 13.40)
    let wide = try area(polygon(square(13.0, 52.0, 1.0)))  // centre 13.5, 52.5
    let near = try area(polygon(square(13.3, 52.4, 0.2)))  // centre 13.4, 52.5
    let away = try area(polygon(square(20, 40, 1)))
    #expect(DeliveryAreaRules.hub(serving: point, among: ["h1": wide, "h2": near, "h3": away]) == "h2")
    var preferred = wide
    preferred.priority = 5
    #expect(DeliveryAreaRules.hub(serving: point, among: ["h1": preferred, "h2": near]) == "h1")
    #expect(DeliveryAreaRules.hub(serving: point, among: ["h9": near, "h4": near]) == "h4")
    #expect(DeliveryAreaRules.hub(serving: GeoPoint(lat: 0, lng: 0), among: ["h1": wide]) == nil)
    #expect(DeliveryAreaRules.hub(serving: point, among: [:]) == nil)
  }

  @Test func anAnswerIsWrittenByHandAsTheEncoderWritesIt() throws {
    for answer in [
      DeliveryAreaAnswer(status: .served, hub: "h3"), DeliveryAreaAnswer(status: .outOfArea, hub: nil),
      DeliveryAreaAnswer(status: .browsing, hub: "h1"),
    ] {
      #expect(answer.json == Array(try JSON.encode(answer)))
    }
  }
}
