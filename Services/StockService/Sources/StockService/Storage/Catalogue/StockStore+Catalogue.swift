import Foundation
import GrocerContracts
import GrocerCore
import GrocerStorage

/// The catalogue screens' tables: each hub's tree and home with the version that any catalogue
/// change raises, and what customers bought (buy again, popularity).
extension StockStore {
  // MARK: Tree, home and version

  /// `hub`'s tree, home and catalogue version; empty ones at version 0 when none was stored.
  func catalogueLayout(hub: HubID, in db: any SQLConnection) throws -> (
    tree: CategoryTree, home: HomeLayout, version: Int64
  ) {
    guard
      let row = try db.queryOne(
        "SELECT categories, home, version FROM catalogue_layouts WHERE hub = ?\(db.lockClause)", hub)
    else { return (.empty, .empty, 0) }
    let roots = try JSON.decode([Category].self, from: row.data(0))
    return (
      try CategoryTree(roots: roots), try JSON.decode(HomeLayout.self, from: row.data(1)), try row.int64(2)
    )
  }

  /// Stores `hub`'s tree and home at `version`.
  func saveCatalogueLayout(
    hub: HubID, tree: CategoryTree, home: HomeLayout, version: Int64, at now: Date, in db: any SQLConnection
  ) throws {
    try db.execute(
      """
      INSERT INTO catalogue_layouts (hub, categories, home, version, updated_at) VALUES (?, ?, ?, ?, ?)
      ON CONFLICT (hub) DO UPDATE SET categories = excluded.categories, home = excluded.home,
        version = excluded.version, updated_at = excluded.updated_at
      """, hub, try JSON.encode(tree.roots), try JSON.encode(home), version, now.timeIntervalSince1970)
  }

  /// Everything `hub`'s catalogue screens show, from one snapshot of the database; nil when
  /// there is no such hub.
  public func catalogue(hub: HubID) throws -> (
    hub: Hub, tree: CategoryTree, home: HomeLayout, version: Int64, products: [CatalogueEntry]
  )? {
    try database.read { db in
      guard let hub = try hubRecord(hub, in: db)?.hub else { return nil }
      let layout = try catalogueLayout(hub: hub.id, in: db)
      let products = try db.query(
        "SELECT \(Self.productColumns), popularity FROM products WHERE hub = ? ORDER BY sku", hub.id
      ).map { row in
        CatalogueEntry(product: try Self.productStock(row).product, popularity: Int(try row.int64(14)))
      }
      return (hub, layout.tree, layout.home, layout.version, products)
    }
  }

  // MARK: Purchases

  /// Adds an order's lines to what `user` bought at `hub` and to each product's popularity: two
  /// writes for the whole order, one statement on PostgreSQL (one per line each cost PostgreSQL most of a round trip per
  /// line), its lines merged by SKU first (one order counts once per product).
  func recordPurchase(
    hub: HubID, user: String, lines: [OrderOutcome.Line], at now: Date, in db: any SQLConnection
  ) throws {
    var quantities: [SKU: Int] = [:]
    for line in lines where line.quantity > 0 { quantities[line.sku, default: 0] += line.quantity }
    let bought = quantities.sorted { $0.key < $1.key }
    guard !bought.isEmpty else { return }
    let at = now.timeIntervalSince1970
    try db.executeTogether([
      (
        """
        INSERT INTO purchases (hub, user_id, sku, orders, quantity, last_at) VALUES \(
          Array(repeating: "(?, ?, ?, 1, ?, ?)", count: bought.count).joined(separator: ", "))
        ON CONFLICT (hub, user_id, sku) DO UPDATE SET orders = purchases.orders + 1,
          quantity = purchases.quantity + excluded.quantity, last_at = excluded.last_at
        """, bought.flatMap { sku, quantity -> [any SQLBindable] in [hub, user, sku, quantity, at] }
      ),
      // The products in SKU order, as every writer of them locks them.
      (
        """
        UPDATE products SET popularity = popularity + CASE sku \(
          Array(repeating: "WHEN ? THEN CAST(? AS BIGINT)", count: bought.count).joined(separator: " ")) ELSE 0 END
        WHERE hub = ? AND sku IN (\(Array(repeating: "?", count: bought.count).joined(separator: ", ")))
        """,
        bought.flatMap { sku, quantity -> [any SQLBindable] in [sku, quantity] } + [hub]
          + bought.map { $0.key }
      ),
    ])
  }

  /// What `user` ordered most often at `hub` (then most units, then most recently), up to
  /// `limit` SKUs.
  public func mostOrdered(hub: HubID, user: String, limit: Int) throws -> [SKU] {
    try database.read { db in
      try db.query(
        """
        SELECT sku FROM purchases WHERE hub = ? AND user_id = ?
        ORDER BY orders DESC, quantity DESC, last_at DESC, sku LIMIT ?
        """, hub, user, limit
      ).map { try $0.string(0) }
    }
  }
}
