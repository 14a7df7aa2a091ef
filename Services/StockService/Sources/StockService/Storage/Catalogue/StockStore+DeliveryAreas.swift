import Foundation
import GrocerContracts
import GrocerCore
import GrocerStorage

/// The hubs' delivery areas: GeoJSON as staff set it, checked again when read.
extension StockStore {
  /// Every hub's delivery area.
  public func deliveryAreas() throws -> [HubID: DeliveryArea] {
    try database.read { db in
      var areas: [HubID: DeliveryArea] = [:]
      for row in try db.query("SELECT hub, area, priority FROM delivery_areas") {
        let geoJSON = try JSON.decode(JSONValue.self, from: row.data(1))
        areas[try row.string(0)] = try DeliveryArea(geoJSON: geoJSON, priority: Int(try row.int64(2)))
      }
      return areas
    }
  }

  /// Whether `hub` exists (nil when not) and its area as stored, read in the one statement that
  /// every reservation begins with; the area is decoded only when a new order needs it.
  func hubWithArea(_ hub: HubID, in db: any SQLConnection) throws -> StoredHubArea? {
    try db.queryOne(
      "SELECT a.area, a.priority FROM hubs h LEFT JOIN delivery_areas a ON a.hub = h.id WHERE h.id = ?", hub
    ).map { row in
      StoredHubArea(geoJSON: try row.optionalBlob(0).map { Data($0) }, priority: try row.optionalInt(1))
    }
  }

  /// Creates or replaces `hub`'s area.
  func saveDeliveryArea(_ area: DeliveryArea, hub: HubID, at now: Date, in db: any SQLConnection) throws {
    try db.execute(
      """
      INSERT INTO delivery_areas (hub, area, priority, updated_at) VALUES (?, ?, ?, ?)
      ON CONFLICT (hub) DO UPDATE SET area = excluded.area, priority = excluded.priority,
        updated_at = excluded.updated_at
      """, hub, try JSON.encode(area.geoJSON), area.priority, now.timeIntervalSince1970)
  }
}

/// A hub's delivery area as stored: none when staff set none.
struct StoredHubArea {
  var geoJSON: Data?
  var priority: Int?

  func area() throws -> DeliveryArea? {
    guard let geoJSON else { return nil }
    return try DeliveryArea(geoJSON: try JSON.decode(JSONValue.self, from: geoJSON), priority: priority ?? 0)
  }
}
