import GrocerContracts
import GrocerCore

/// Body of staff `PUT /v1/hubs/{hub}`: `{ name?, hours, pricing, currency? }`, creating or
/// replacing a hub. Unknown fields are refused.
///
/// `name` defaults to the existing name, else the hub id. `currency` defaults to the existing
/// hub's, else to `pricing.minimumOrder`'s. A hub's currency cannot change once set (its products
/// are priced in it): a different one is `currencyMismatch`.
public struct HubUpsert: StrictBody, Hashable {
  public var name: String?
  public var hours: OpeningHours
  public var pricing: PricingSettings
  public var currency: String?

  public static let allowedKeys: Set<String> = ["name", "hours", "pricing", "currency"]
  public static let maximumNameLength = 200

  public init(name: String? = nil, hours: OpeningHours, pricing: PricingSettings, currency: String? = nil) {
    self.name = name
    self.hours = hours
    self.pricing = pricing
    self.currency = currency
  }

  /// The hub to store; `existing` is the hub as stored now, if any.
  public func validate(hub id: HubID, existing: Hub?) throws(DomainError) -> Hub {
    try Identifier.validateHub(id)
    let name = ProductUpsert.trimmed(self.name ?? existing?.name ?? id)
    try Self.validateName(name)
    let currency = self.currency ?? existing?.currency ?? pricing.minimumOrder.currency
    try MoneyRules.validateCurrency(currency)
    if let existing, existing.currency != currency {
      throw .currencyMismatch(field: "currency", expected: existing.currency, got: currency)
    }
    do { try hours.validate() } catch { throw DomainError(error) }
    try pricing.validate(currency: currency)
    return Hub(id: id, name: name, hours: hours, pricing: pricing, currency: currency)
  }

  static func validateName(_ name: String) throws(DomainError) {
    guard !name.isEmpty else { throw .invalidName("must not be empty") }
    guard name.count <= maximumNameLength else {
      throw .invalidName("must be at most \(maximumNameLength) characters")
    }
  }
}
