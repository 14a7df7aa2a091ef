import Foundation
import GrocerContracts
import GrocerCore

/// Delivery areas: staff set a hub's, and a point is resolved to the hub that serves it.
extension StockCommands {
  /// Sets `hub`'s delivery area; nil when there is no such hub. Publishes `catalogue.changed`,
  /// so every replica resolves addresses with it at once.
  public func setDeliveryArea(hub: HubID, _ area: DeliveryArea, correlationID: String?) throws
    -> DeliveryArea?
  {
    try store.database.writeLockingRows { db -> DeliveryArea? in
      guard try store.hubExists(hub, in: db) else { return nil }
      let now = clock.now()
      try store.saveDeliveryArea(area, hub: hub, at: now, in: db)
      try raiseCatalogueVersion(hub: hub, correlationID, db)
      return area
    }
  }

  /// Every hub's delivery area, for resolving addresses (`DeliveryAreaRules`).
  public func deliveryAreas() throws -> [HubID: DeliveryArea] { try store.deliveryAreas() }
}
