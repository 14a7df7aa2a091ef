import GrocerContracts
import GrocerCore

/// One page of a hub's products for the `stock.catalogue` request/reply, each as its latest
/// `stock.changed` carried it (same `available`, `version` = that event's `sequence`; `reason`
/// is nil), so a service filling an empty copy can merge it with the events in any order.
public struct CataloguePage: Hashable, Sendable {
  public var products: [Versioned<StockChanged>]
  /// The last SKU of this page when another page follows; nil on the last page.
  public var next: SKU?

  public init(products: [Versioned<StockChanged>], next: SKU?) {
    self.products = products
    self.next = next
  }

  /// How many rows to read for a page of `limit` (at least 1): one more than asked tells
  /// whether another page follows, without a second query.
  public static func rowsToRead(limit: Int) -> Int { max(1, limit) + 1 }

  /// The page of `limit` from `rows`, read with `rowsToRead(limit:)`.
  public init(hub: HubID, rows: [StockedProduct], limit: Int) {
    var rows = rows
    let more = rows.count > max(1, limit)
    if more { rows.removeLast(rows.count - max(1, limit)) }
    self.init(
      products: rows.map {
        Versioned(
          StockChanged(hub: hub, product: $0.product, available: $0.available, reason: nil),
          version: $0.version)
      },
      next: more ? rows.last?.product.sku : nil)
  }

  /// Every hub as its latest `hub.changed` carried it, with that event's `sequence` as `version`.
  public static func hubs(_ hubs: [(hub: Hub, version: Int64)]) -> [Versioned<HubChanged>] {
    hubs.map { Versioned(HubChanged(hub: $0.hub), version: $0.version) }
  }
}
