/// An amount of money in whole minor units (cents), never a floating-point number.
///
/// Encodes as `{ "minorUnits": 129, "currency": "EUR" }`, the shape every Grocer API uses.
public struct Money: Codable, Hashable, Sendable, CustomStringConvertible {
  public var minorUnits: Int
  public var currency: String

  public init(minorUnits: Int, currency: String = "EUR") {
    self.minorUnits = minorUnits
    self.currency = currency
  }

  public static func zero(_ currency: String = "EUR") -> Money { Money(minorUnits: 0, currency: currency) }

  public var description: String { "\(minorUnits) \(currency)" }

  /// Whether the currency is three upper-case ASCII letters (ISO 4217 shape).
  public var hasValidCurrency: Bool {
    currency.utf8.count == 3 && currency.utf8.allSatisfy { $0 >= 65 && $0 <= 90 }
  }
}
