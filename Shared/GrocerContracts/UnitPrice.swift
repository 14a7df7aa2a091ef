import GrocerCore

/// A comparison price: `amount` per `per` (`{ "amount": Money, "per": "kg" }`).
public struct UnitPrice: Codable, Hashable, Sendable {
  /// The reference quantities German shelf labels use.
  public enum Unit: String, Codable, Hashable, Sendable, CaseIterable {
    case kilogram = "kg"
    case hundredGrams = "100g"
    case litre = "l"
    case hundredMillilitres = "100ml"
    case piece = "piece"
    case metre = "m"

    public init(from decoder: any Decoder) throws {
      let text = try decoder.singleValueContainer().decode(String.self)
      guard let unit = Unit(rawValue: text) else {
        throw ContractError.invalidUnitPrice(
          "`per` must be one of \(Unit.allCases.map(\.rawValue).joined(separator: ", "))")
      }
      self = unit
    }
  }

  public var amount: Money
  public var per: Unit

  public init(amount: Money, per: Unit) {
    self.amount = amount
    self.per = per
  }
}
