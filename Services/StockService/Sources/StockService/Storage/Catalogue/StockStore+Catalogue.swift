import Foundation
import GrocerContracts
import GrocerCore
import GrocerStorage

/// The catalogue screens' tables: each hub's tree and home with the version that any catalogue
/// change raises, what customers bought (buy again, popularity), and the search index.
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
  /// statements for the whole order (one per line each cost PostgreSQL most of a round trip per
  /// line), its lines merged by SKU first (one order counts once per product).
  func recordPurchase(
    hub: HubID, user: String, lines: [OrderOutcome.Line], at now: Date, in db: any SQLConnection
  ) throws {
    var quantities: [SKU: Int] = [:]
    for line in lines where line.quantity > 0 { quantities[line.sku, default: 0] += line.quantity }
    let bought = quantities.sorted { $0.key < $1.key }
    guard !bought.isEmpty else { return }
    let at = now.timeIntervalSince1970
    try db.execute(
      """
      INSERT INTO purchases (hub, user_id, sku, orders, quantity, last_at) VALUES \(
        Array(repeating: "(?, ?, ?, 1, ?, ?)", count: bought.count).joined(separator: ", "))
      ON CONFLICT (hub, user_id, sku) DO UPDATE SET orders = purchases.orders + 1,
        quantity = purchases.quantity + excluded.quantity, last_at = excluded.last_at
      """, bindings: bought.flatMap { sku, quantity -> [any SQLBindable] in [hub, user, sku, quantity, at] })
    // The products in SKU order, as every writer of them locks them.
    try db.execute(
      """
      UPDATE products SET popularity = popularity + CASE sku \(
        Array(repeating: "WHEN ? THEN CAST(? AS BIGINT)", count: bought.count).joined(separator: " ")) ELSE 0 END
      WHERE hub = ? AND sku IN (\(Array(repeating: "?", count: bought.count).joined(separator: ", ")))
      """,
      bindings: bought.flatMap { sku, quantity -> [any SQLBindable] in [sku, quantity] } + [hub]
        + bought.map { $0.key })
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

  // MARK: Search

  /// Puts `product` into the search index under its name, brand and category names.
  func index(_ product: Product, hub: HubID, categoryNames: [String], in db: any SQLConnection) throws {
    let category = categoryNames.joined(separator: " ")
    let brand = product.brand ?? ""
    switch db.dialect {
    case .sqlite:
      // FTS5 rows are found by rowid; `product_search_keys` gives each hub and SKU one.
      try db.execute(
        "INSERT INTO product_search_keys (hub, sku) VALUES (?, ?) ON CONFLICT (hub, sku) DO NOTHING", hub,
        product.sku)
      guard
        let key = try db.queryOne(
          "SELECT id FROM product_search_keys WHERE hub = ? AND sku = ?", hub, product.sku)
      else { return }
      let id = try key.int64(0)
      try db.execute("DELETE FROM product_search WHERE rowid = ?", id)
      try db.execute(
        "INSERT INTO product_search (rowid, name, brand, category) VALUES (?, ?, ?, ?)", id, product.name,
        brand,
        category)
    case .postgresql:
      // Weighted as FTS5's bm25 weights below: the name counts most, the category least.
      try db.execute(
        """
        INSERT INTO product_search (hub, sku, document) VALUES (?, ?,
          setweight(to_tsvector('simple', ?), 'A') || setweight(to_tsvector('simple', ?), 'B')
          || setweight(to_tsvector('simple', ?), 'C'))
        ON CONFLICT (hub, sku) DO UPDATE SET document = excluded.document
        """, hub, product.sku, SearchQuery.fold(product.name), SearchQuery.fold(brand),
        SearchQuery.fold(category))
    }
  }

  /// `hub`'s products matching every term of `query` as a prefix, best first (FTS5's bm25 or
  /// PostgreSQL's ts_rank, then popularity, then SKU), `limit` of them after the first `offset`.
  public func search(hub: HubID, _ query: SearchQuery, offset: Int, limit: Int) throws -> [SKU] {
    try database.read { db in
      let rows: [SQLRow]
      switch db.dialect {
      case .sqlite:
        rows = try db.query(
          """
          SELECT k.sku FROM product_search s
          JOIN product_search_keys k ON k.id = s.rowid
          JOIN products p ON p.hub = k.hub AND p.sku = k.sku
          WHERE product_search MATCH ? AND k.hub = ?
          ORDER BY bm25(product_search, 10.0, 4.0, 1.0), p.popularity DESC, k.sku
          LIMIT ? OFFSET ?
          """, query.ftsMatch, hub, limit, offset)
      case .postgresql:
        rows = try db.query(
          """
          SELECT s.sku FROM product_search s
          JOIN products p ON p.hub = s.hub AND p.sku = s.sku,
          to_tsquery('simple', ?) q
          WHERE s.hub = ? AND s.document @@ q
          ORDER BY ts_rank(s.document, q) DESC, p.popularity DESC, s.sku
          LIMIT ? OFFSET ?
          """, query.tsQuery, hub, limit, offset)
      }
      return try rows.map { try $0.string(0) }
    }
  }

  /// Every product of `hub`, for indexing again after its category names changed.
  func products(ofHub hub: HubID, in db: any SQLConnection) throws -> [Product] {
    try db.query("SELECT \(Self.productColumns) FROM products WHERE hub = ?", hub).map {
      try Self.productStock($0).product
    }
  }
}
