import GrocerContracts
import GrocerCore

extension StockCommands {
  /// Every hub for the `stock.catalogue` request/reply, in id order.
  public func catalogueHubs() throws -> [Versioned<HubChanged>] {
    CataloguePage.hubs(try store.hubsWithVersions())
  }

  /// A page of `hub`'s products in SKU order after `after` for the `stock.catalogue`
  /// request/reply; nil when the hub does not exist.
  public func catalogueProducts(hub: HubID, after: SKU?, limit: Int) throws -> CataloguePage? {
    try store.products(ofExistingHub: hub, after: after, limit: CataloguePage.rowsToRead(limit: limit)).map {
      CataloguePage(hub: hub, rows: $0, limit: limit)
    }
  }
}
