import GrocerContracts

/// A product as the API shows it: its catalogue fields, what is available now and its version.
public struct StockedProduct: Hashable, Sendable {
  public var hub: HubID
  public var product: Product
  /// On hand minus what open reservations hold.
  public var available: Int
  /// Rises by one on every change of count or price: the `sequence` of its `stock.changed`.
  public var version: Int64

  public init(hub: HubID, product: Product, available: Int, version: Int64) {
    self.hub = hub
    self.product = product
    self.available = available
    self.version = version
  }

  /// This version of the product, for dropping cached counts older than it.
  public var movement: StockMovement { StockMovement(hub: hub, sku: product.sku, version: version) }
}

/// A count that moved, for the local cache (the event does the same for other replicas).
public struct StockMovement: Hashable, Sendable {
  public var hub: HubID
  public var sku: SKU
  public var version: Int64
}

/// A product at a hub with its counts: what the stock rules read and change.
public struct ProductStock: Hashable, Sendable {
  public var hub: HubID
  public var product: Product
  public var level: StockLevel

  public init(hub: HubID, product: Product, level: StockLevel) {
    self.hub = hub
    self.product = product
    self.level = level
  }

  /// As the API shows it.
  public var stocked: StockedProduct {
    StockedProduct(hub: hub, product: product, available: level.available, version: level.version)
  }

  /// The `stock.changed` payload for this state, published with `level.version` as its sequence.
  public func changed(reason: String?) -> StockChanged {
    StockChanged(hub: hub, product: product, available: level.available, reason: reason)
  }
}
