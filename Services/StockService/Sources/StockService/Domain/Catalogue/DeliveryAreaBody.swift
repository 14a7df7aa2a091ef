import Foundation
import GrocerContracts
import GrocerCore

/// The body of `PUT /v1/hubs/{hub}/delivery-area`: `{ area: GeoJSON Polygon | MultiPolygon,
/// priority?: Int }`.
public struct DeliveryAreaBody: StrictBody, Hashable {
  public var area: JSONValue
  public var priority: Int?

  public static let allowedKeys: Set<String> = ["area", "priority"]

  /// The area it describes, checked.
  public func validate() throws(DomainError) -> DeliveryArea {
    try DeliveryArea(geoJSON: area, priority: priority ?? 0)
  }
}

/// What the app learns of a point: `{ status: "served", hub }`, `{ status: "outOfArea" }`, or
/// without a point `{ status: "browsing", hub: <default hub> }`.
public struct DeliveryAreaAnswer: Encodable, Hashable, Sendable {
  public enum Status: String, Encodable, Sendable { case served, outOfArea, browsing }
  public var status: Status
  public var hub: HubID?

  /// `{"hub":…,"status":…}` written by hand (keys sorted, no hub when there is none), as
  /// `JSONEncoder` writes it: one per address lookup.
  public var json: [UInt8] {
    var json = JSONBytes(capacity: 48)
    json.beginObject()
    if let hub {
      json.key("hub")
      json.string(hub)
    }
    json.key("status")
    json.string(status.rawValue)
    json.endObject()
    return json.bytes
  }

  /// Reads `lat` and `lng` (both or neither; decimal degrees in range).
  public static func point(latitude: String?, longitude: String?) throws(DomainError) -> GeoPoint? {
    switch (latitude, longitude) {
    case (nil, nil): return nil
    case (nil, _), (_, nil): throw .invalidCoordinates("`lat` and `lng` come together, or neither")
    case (let latitude?, let longitude?):
      guard let lat = Double(latitude), let lng = Double(longitude),
        case let point = GeoPoint(lat: lat, lng: lng), point.isValid
      else {
        throw .invalidCoordinates("`lat` must be a number from −90 to 90 and `lng` from −180 to 180")
      }
      return point
    }
  }
}
