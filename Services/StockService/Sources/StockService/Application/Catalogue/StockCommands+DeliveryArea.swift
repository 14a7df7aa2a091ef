import Foundation
import GrocerContracts
import GrocerCore

/// Delivery areas: staff set a hub's, and a point is resolved to the hub that serves it.
extension StockCommands {
  /// Sets `hub`'s delivery area; nil when there is no such hub.
  public func setDeliveryArea(hub: HubID, _ area: DeliveryArea) throws -> DeliveryArea? {
    try store.database.write { db -> DeliveryArea? in
      guard try store.hubExists(hub, in: db) else { return nil }
      try store.saveDeliveryArea(area, hub: hub, at: clock.now(), in: db)
      return area
    }
  }

  /// The hub whose area holds `point` (`DeliveryAreaRules`); nil when none does.
  public func hub(serving point: GeoPoint) throws -> HubID? {
    DeliveryAreaRules.hub(serving: point, among: try store.deliveryAreas())
  }
}
