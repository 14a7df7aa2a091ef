import GrocerContracts

/// What storing a product's or a hub's catalogue fields changes: only a difference from what is
/// stored is a change, and only a change gets a new version and an event.
public enum CatalogueChange: Hashable, Sendable {
  /// As stored already: nothing is written or published.
  case unchanged
  /// New: stored at version 1.
  case created
  /// Different from what is stored: stored at the next version.
  case changed

  /// Storing `product` over `stored` (nil when the hub does not have it).
  public static func of(_ product: Product, over stored: Product?) -> Self {
    guard let stored else { return .created }
    return stored == product ? .unchanged : .changed
  }

  /// Storing `hub` over `stored` (nil when there is no such hub).
  public static func of(_ hub: Hub, over stored: Hub?) -> Self {
    guard let stored else { return .created }
    return stored == hub ? .unchanged : .changed
  }

  /// The version to store after `current` (0 when new); nil when unchanged.
  public func version(after current: Int64) -> Int64? {
    self == .unchanged ? nil : current + 1
  }

  /// The `stock.changed` reason of a product change; nil when unchanged.
  public var productReason: String? {
    switch self {
    case .unchanged: nil
    case .created: StockChangeReason.productCreated
    case .changed: StockChangeReason.productChanged
    }
  }
}
