import GrocerCore

/// The checks every amount a client sends goes through.
enum MoneyRules {
  /// Largest amount we accept anywhere (100,000.00 in a two-decimal currency), so sums of
  /// 100 lines × 99 never come near overflow.
  static let maximumMinorUnits = 10_000_000

  static func validate(_ money: Money, field: String, currency: String) throws(DomainError) {
    guard money.hasValidCurrency else { throw .invalidCurrency(money.currency) }
    guard money.currency == currency else {
      throw .currencyMismatch(field: field, expected: currency, got: money.currency)
    }
    guard money.minorUnits >= 0 else { throw .invalidPrice(field: field, detail: "must not be negative") }
    guard money.minorUnits <= maximumMinorUnits else {
      throw .invalidPrice(field: field, detail: "must be at most \(maximumMinorUnits) minor units")
    }
  }

  static func validateCurrency(_ currency: String) throws(DomainError) {
    guard Money(minorUnits: 0, currency: currency).hasValidCurrency else { throw .invalidCurrency(currency) }
  }
}
