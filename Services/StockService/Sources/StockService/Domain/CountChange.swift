/// A staff change of a product's on-hand count: a stock take (`PUT …/stock/{sku}`) or a signed
/// adjustment (`POST …/adjustments`). Orders move counts through reservations instead.
public enum CountChange: Hashable, Sendable {
  /// The count found at a stock take, validated (`StockSet.validate`).
  case set(Int)
  case adjust(StockAdjustment)

  /// The on-hand count after the change, from `current`; an adjustment may not take it below 0
  /// or above `StockSet.maximumCount` (`StockAdjustment.apply`).
  public func target(from current: Int) throws(DomainError) -> Int {
    switch self {
    case .set(let count): count
    case .adjust(let adjustment): try adjustment.apply(to: current)
    }
  }

  /// The `stock.changed` reason and the audit trail's reason.
  public var reason: String {
    switch self {
    case .set: StockChangeReason.stockTake
    case .adjust(let adjustment): adjustment.reason.rawValue
    }
  }
}
