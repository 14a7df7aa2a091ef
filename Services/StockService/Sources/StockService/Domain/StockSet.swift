import GrocerCore

/// Body of staff `PUT /v1/hubs/{hub}/stock/{sku}`: `{ "available": 12 }`, the count found at a
/// stock take. Unknown fields are refused.
public struct StockSet: StrictBody, Hashable {
  public var available: Int

  public static let allowedKeys: Set<String> = ["available"]
  /// The largest count a hub may hold of one product.
  public static let maximumCount = 1_000_000

  public init(available: Int) { self.available = available }

  /// The count to store, 0…1,000,000.
  public func validate() throws(DomainError) -> Int {
    guard (0...Self.maximumCount).contains(available) else { throw .invalidCount(available) }
    return available
  }
}
