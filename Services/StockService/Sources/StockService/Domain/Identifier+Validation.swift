import GrocerContracts

extension Identifier {
  /// Throws `invalidSKU` unless `sku` follows the rule.
  public static func validateSKU(_ sku: String) throws(DomainError) {
    guard isValid(sku) else { throw .invalidSKU(sku) }
  }

  /// Throws `invalidHubID` unless `hub` follows the rule.
  public static func validateHub(_ hub: String) throws(DomainError) {
    guard isValid(hub) else { throw .invalidHubID(hub) }
  }
}
