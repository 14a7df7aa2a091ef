import Foundation
import GrocerContracts
import GrocerCore
import GrocerStorage

/// The catalogue screens' use cases: staff arrange a hub's categories and home, customers'
/// orders feed buy again and popularity, and the screens read a hub's catalogue whole.
extension StockCommands {
  /// Replaces `hub`'s category tree; nil when there is no such hub. Publishes `catalogue.changed`
  /// when the tree changed.
  public func setCategories(hub: HubID, _ tree: CategoryTree, correlationID: String?) throws -> CategoryTree?
  {
    try store.database.writeLockingRows { db -> CategoryTree? in
      guard try store.hubExists(hub, in: db) else { return nil }
      let stored = try store.catalogueLayout(hub: hub, in: db)
      guard stored.tree != tree else { return tree }
      try saveCatalogue(hub: hub, tree: tree, home: stored.home, after: stored.version, correlationID, db)
      return tree
    }
  }

  /// Replaces `hub`'s home layout; nil when there is no such hub. Publishes `catalogue.changed`
  /// when it changed.
  public func setHome(hub: HubID, _ home: HomeLayout, correlationID: String?) throws -> HomeLayout? {
    try store.database.writeLockingRows { db -> HomeLayout? in
      guard try store.hubExists(hub, in: db) else { return nil }
      let stored = try store.catalogueLayout(hub: hub, in: db)
      guard stored.home != home else { return home }
      try saveCatalogue(hub: hub, tree: stored.tree, home: home, after: stored.version, correlationID, db)
      return home
    }
  }

  /// Everything `hub`'s catalogue screens show, built into one snapshot; nil when there is no
  /// such hub.
  public func catalogueSnapshot(hub: HubID) throws -> CatalogueSnapshot? {
    try store.catalogue(hub: hub).map {
      CatalogueSnapshot(hub: $0.hub, tree: $0.tree, layout: $0.home, products: $0.products)
    }
  }

  /// What `user` ordered most at `hub`, most first.
  public func buyAgain(hub: HubID, user: String, limit: Int) throws -> [SKU] {
    try store.mostOrdered(hub: hub, user: user, limit: limit)
  }

  /// Inside a product's write: checks its category against the hub's tree and raises the hub's
  /// catalogue version with its `catalogue.changed`.
  func recordCatalogueChange(
    of product: Product, hub: HubID, _ correlationID: String?, _ db: any SQLConnection
  ) throws {
    let layout = try store.catalogueLayout(hub: hub, in: db)
    if let category = product.category, !layout.tree.contains(category) {
      throw StockStoreError.domain(.unknownCategory(category))
    }
    try saveCatalogue(
      hub: hub, tree: layout.tree, home: layout.home, after: layout.version, correlationID, db)
  }

  /// Raises `hub`'s catalogue version with its `catalogue.changed`, for a change stored apart
  /// from the tree and home (its delivery area).
  func raiseCatalogueVersion(hub: HubID, _ correlationID: String?, _ db: any SQLConnection) throws {
    let layout = try store.catalogueLayout(hub: hub, in: db)
    try saveCatalogue(
      hub: hub, tree: layout.tree, home: layout.home, after: layout.version, correlationID, db)
  }

  /// Stores `hub`'s tree and home at the version after `current` with its `catalogue.changed`.
  private func saveCatalogue(
    hub: HubID, tree: CategoryTree, home: HomeLayout, after current: Int64, _ correlationID: String?,
    _ db: any SQLConnection
  ) throws {
    let (now, version) = (clock.now(), current + 1)
    try store.saveCatalogueLayout(hub: hub, tree: tree, home: home, version: version, at: now, in: db)
    try store.append(
      CatalogueChanged(hub: hub, version: version).message(
        id: ids.next(), occurredAt: now, correlationId: correlationID),
      in: db)
  }
}
