import Foundation
import GrocerContracts
import GrocerCore

/// The area a hub delivers to: a GeoJSON `Polygon` or `MultiPolygon` (holes allowed), checked
/// when staff set it. A point on a border counts as inside.
public struct DeliveryArea: Hashable, Sendable {
  /// Polygons, each an outer ring followed by its holes; each ring closed (last = first).
  public var polygons: [[[GeoPoint]]]
  /// Where areas overlap, the higher priority wins (then the nearer hub).
  public var priority: Int
  /// The smallest box around every polygon: a point outside it is outside without looking at an
  /// edge, which is most points for most hubs.
  private var bounds = Bounds(south: 0, west: 0, north: 0, east: 0)

  private struct Bounds: Hashable, Sendable {
    var south, west, north, east: Double

    /// With the border test's tolerance.
    func contains(_ point: GeoPoint) -> Bool {
      point.lat >= south - 1e-12 && point.lat <= north + 1e-12 && point.lng >= west - 1e-12
        && point.lng <= east + 1e-12
    }
  }

  public static let priorityRange = -1_000_000...1_000_000
  /// Enough for any real district, small enough that a lookup stays cheap.
  public static let maximumPoints = 10_000

  /// Reads and checks a GeoJSON geometry; the error names what is wrong and where.
  public init(geoJSON: JSONValue, priority: Int = 0) throws(DomainError) {
    guard Self.priorityRange.contains(priority) else {
      throw .invalidArea("`priority` must be between −1000000 and 1000000, got \(priority)")
    }
    guard case .object(let object) = geoJSON else { throw .invalidArea("`area` must be a GeoJSON object") }
    guard case .string(let type)? = object["type"] else { throw .invalidArea("`area.type` is missing") }
    guard let coordinates = object["coordinates"] else { throw .invalidArea("`area.coordinates` is missing") }
    switch type {
    case "Polygon":
      polygons = [try Self.polygon(coordinates, at: "area.coordinates")]
    case "MultiPolygon":
      guard case .array(let items) = coordinates, !items.isEmpty else {
        throw .invalidArea("`area.coordinates` must be a non-empty array of polygons")
      }
      polygons = try items.enumerated().map { (index, item) throws(DomainError) in
        try Self.polygon(item, at: "area.coordinates[\(index)]")
      }
    default:
      throw .invalidArea("`area.type` must be Polygon or MultiPolygon, got \(type.prefix(40))")
    }
    guard polygons.joined().map(\.count).reduce(0, +) <= Self.maximumPoints else {
      throw .invalidArea("`area` has more than \(Self.maximumPoints) positions")
    }
    self.priority = priority
    let outer = polygons.flatMap { $0[0] }
    bounds = Bounds(
      south: outer.map(\.lat).min() ?? 0, west: outer.map(\.lng).min() ?? 0,
      north: outer.map(\.lat).max() ?? 0,
      east: outer.map(\.lng).max() ?? 0)
  }

  /// The area as GeoJSON (a `Polygon` when it has one polygon).
  public var geoJSON: JSONValue {
    func ring(_ points: [GeoPoint]) -> JSONValue {
      .array(points.map { .array([.number($0.lng), .number($0.lat)]) })
    }
    let shapes = polygons.map { JSONValue.array($0.map(ring)) }
    return polygons.count == 1
      ? .object(["type": .string("Polygon"), "coordinates": shapes[0]])
      : .object(["type": .string("MultiPolygon"), "coordinates": .array(shapes)])
  }

  /// Whether `point` is inside (a border counts as inside, a hole's too).
  public func contains(_ point: GeoPoint) -> Bool {
    guard bounds.contains(point) else { return false }
    return polygons.contains { rings in
      if rings.contains(where: { Self.onBorder(point, $0) }) { return true }
      guard Self.encloses(rings[0], point) else { return false }
      return !rings.dropFirst().contains { Self.encloses($0, point) }
    }
  }

  /// The mean of the outer rings' corners: where "the nearer hub" is measured from.
  public var centre: GeoPoint {
    let corners = polygons.flatMap { $0[0].dropLast() }
    let count = Double(max(1, corners.count))
    return GeoPoint(
      lat: corners.map(\.lat).reduce(0, +) / count,
      lng: corners.map(\.lng).reduce(0, +) / count)
  }

  /// A distance to `point` good for comparing hubs (degrees, longitude shrunk by latitude).
  public func distance(to point: GeoPoint) -> Double {
    let centre = centre
    let scale = cos(point.lat * .pi / 180)
    let dx = (centre.lng - point.lng) * scale
    let dy = centre.lat - point.lat
    return (dx * dx + dy * dy).squareRoot()
  }

  // MARK: Reading and checking

  private static func polygon(_ value: JSONValue, at path: String) throws(DomainError) -> [[GeoPoint]] {
    guard case .array(let items) = value, !items.isEmpty else {
      throw .invalidArea("`\(path)` must be a non-empty array of rings")
    }
    return try items.enumerated().map { (index, item) throws(DomainError) in
      try ring(item, at: "\(path)[\(index)]")
    }
  }

  private static func ring(_ value: JSONValue, at path: String) throws(DomainError) -> [GeoPoint] {
    guard case .array(let items) = value else {
      throw .invalidArea("`\(path)` must be an array of positions")
    }
    guard items.count >= 4 else {
      throw .invalidArea("`\(path)` has \(items.count) positions; a ring needs at least 4")
    }
    let points = try items.enumerated().map { (index, item) throws(DomainError) in
      try position(item, at: "\(path)[\(index)]")
    }
    guard points.first == points.last else {
      throw .invalidArea("`\(path)` is not closed: its last position must equal its first")
    }
    guard Set(points.dropLast()).count >= 3 else {
      throw .invalidArea("`\(path)` needs at least 3 distinct positions")
    }
    if let crossing = selfIntersection(points) {
      throw .invalidArea("`\(path)` intersects itself (edges \(crossing.0) and \(crossing.1))")
    }
    return points
  }

  private static func position(_ value: JSONValue, at path: String) throws(DomainError) -> GeoPoint {
    guard case .array(let numbers) = value, (2...3).contains(numbers.count),
      case .number(let longitude) = numbers[0], case .number(let latitude) = numbers[1]
    else { throw .invalidArea("`\(path)` must be [longitude, latitude]") }
    let point = GeoPoint(lat: latitude, lng: longitude)
    guard point.isValid else {
      throw .invalidArea("`\(path)` is out of range (longitude −180…180, latitude −90…90)")
    }
    return point
  }

  /// The first two edges of a closed ring that cross or overlap, other than neighbours meeting
  /// at their shared corner.
  static func selfIntersection(_ ring: [GeoPoint]) -> (Int, Int)? {
    let edges = ring.count - 1
    for first in 0..<edges {
      for second in (first + 1)..<edges {
        let (a, b, c, d) = (ring[first], ring[first + 1], ring[second], ring[second + 1])
        let neighbours = second == first + 1 || (first == 0 && second == edges - 1)
        if neighbours {
          // Neighbours share one corner; they may only meet there (not fold back onto each other).
          let shared = second == first + 1 ? b : a
          let (other1, other2) = second == first + 1 ? (a, d) : (b, c)
          if collinear(shared, other1, other2) && onSegment(other2, shared, other1)
            || collinear(shared, other1, other2) && onSegment(other1, shared, other2)
          {
            return (first, second)
          }
        } else if segmentsMeet(a, b, c, d) {
          return (first, second)
        }
      }
    }
    return nil
  }

  // MARK: Plane geometry (longitude as x, latitude as y: areas are city-sized)

  private static func cross(_ o: GeoPoint, _ a: GeoPoint, _ b: GeoPoint) -> Double {
    (a.lng - o.lng) * (b.lat - o.lat) - (a.lat - o.lat)
      * (b.lng - o.lng)
  }

  private static func collinear(_ a: GeoPoint, _ b: GeoPoint, _ c: GeoPoint) -> Bool {
    abs(cross(a, b, c)) <= 1e-12
  }

  /// Whether `p`, collinear with `a`–`b`, lies on that segment.
  private static func onSegment(_ p: GeoPoint, _ a: GeoPoint, _ b: GeoPoint) -> Bool {
    min(a.lng, b.lng) - 1e-12 <= p.lng
      && p.lng <= max(a.lng, b.lng) + 1e-12
      && min(a.lat, b.lat) - 1e-12 <= p.lat
      && p.lat <= max(a.lat, b.lat) + 1e-12
  }

  private static func segmentsMeet(_ a: GeoPoint, _ b: GeoPoint, _ c: GeoPoint, _ d: GeoPoint) -> Bool {
    let (d1, d2) = (cross(c, d, a), cross(c, d, b))
    let (d3, d4) = (cross(a, b, c), cross(a, b, d))
    if (d1 > 1e-12 && d2 < -1e-12 || d1 < -1e-12 && d2 > 1e-12)
      && (d3 > 1e-12 && d4 < -1e-12 || d3 < -1e-12 && d4 > 1e-12)
    {
      return true
    }
    return abs(d1) <= 1e-12 && onSegment(a, c, d) || abs(d2) <= 1e-12 && onSegment(b, c, d)
      || abs(d3) <= 1e-12 && onSegment(c, a, b) || abs(d4) <= 1e-12 && onSegment(d, a, b)
  }

  private static func onBorder(_ point: GeoPoint, _ ring: [GeoPoint]) -> Bool {
    zip(ring, ring.dropFirst()).contains { a, b in collinear(a, b, point) && onSegment(point, a, b) }
  }

  /// Ray casting: whether `point` (not on the border) is inside the closed `ring`.
  private static func encloses(_ ring: [GeoPoint], _ point: GeoPoint) -> Bool {
    var inside = false
    for (a, b) in zip(ring, ring.dropFirst())
    where (a.lat > point.lat) != (b.lat > point.lat) {
      let x =
        a.lng + (point.lat - a.lat) / (b.lat - a.lat) * (b.lng - a.lng)
      if point.lng < x { inside.toggle() }
    }
    return inside
  }
}

/// Which hub serves a point: of the areas that contain it, the highest priority, then the
/// nearest hub (its area's centre), then the smaller hub id, so the answer never depends on
/// the order areas were read in.
public enum DeliveryAreaRules {
  public static func hub(serving point: GeoPoint, among areas: [HubID: DeliveryArea]) -> HubID? {
    areas.filter { $0.value.contains(point) }
      .min { left, right in
        if left.value.priority != right.value.priority { return left.value.priority > right.value.priority }
        let (near, far) = (left.value.distance(to: point), right.value.distance(to: point))
        if near != far { return near < far }
        return left.key < right.key
      }?.key
  }
}
