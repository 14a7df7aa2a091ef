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

  /// `hub`'s area; nil when none was set.
  func deliveryArea(hub: HubID, in db: any SQLConnection) throws -> DeliveryArea? {
    try db.queryOne("SELECT area, priority FROM delivery_areas WHERE hub = ?", hub).map { row in
      try DeliveryArea(
        geoJSON: try JSON.decode(JSONValue.self, from: row.data(0)), priority: Int(try row.int64(1)))
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
