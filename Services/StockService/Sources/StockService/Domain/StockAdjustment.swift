import GrocerCore

/// Body of staff `POST /v1/hubs/{hub}/stock/{sku}/adjustments`: `{ "delta": -3,
/// "reason": "damaged" }`. Unknown fields are refused; an unknown reason is `invalidReason`.
public struct StockAdjustment: StrictBody, Hashable {
  public var delta: Int
  public var reason: Reason

  /// Why a count moved outside of orders; kept with the change for the audit trail.
  public enum Reason: String, Codable, Hashable, Sendable, CaseIterable {
    case received, damaged, expired, lost, found, correction, returned

    public init(from decoder: any Decoder) throws {
      let text = try decoder.singleValueContainer().decode(String.self)
      guard let reason = Reason(rawValue: text) else { throw DomainError.invalidReason(text) }
      self = reason
    }
  }

  public static let allowedKeys: Set<String> = ["delta", "reason"]
  public static let maximumDelta = 1_000_000

  public init(delta: Int, reason: Reason) {
    self.delta = delta
    self.reason = reason
  }

  /// Non-zero and at most 1,000,000 either way.
  public func validate() throws(DomainError) {
    guard delta != 0, delta.magnitude <= Self.maximumDelta else { throw .invalidDelta(delta) }
  }

  /// The count after the adjustment: never below 0 (`countWouldGoNegative`, a distinct error
  /// so staff see "you only have 2") and never above `StockSet.maximumCount`.
  public func apply(to current: Int) throws(DomainError) -> Int {
    try validate()
    let result = current + delta
    guard result >= 0 else { throw .countWouldGoNegative(current: current, delta: delta) }
    guard result <= StockSet.maximumCount else { throw .countTooLarge(current: current, delta: delta) }
    return result
  }
}
