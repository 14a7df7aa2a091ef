import Foundation
import GrocerContracts
import GrocerCore

extension Hub {
  /// Checks every rule a stored hub follows.
  public func validate() throws(DomainError) {
    try Identifier.validateHub(id)
    try HubUpsert.validateName(name)
    try MoneyRules.validateCurrency(currency)
    do { try hours.validate() } catch { throw DomainError(error) }
    try pricing.validate(currency: currency)
  }
}

/// The reply of `GET /v1/hubs/{hub}`: `{ hub, name, currency, hours: { isOpen, opensAt,
/// closesAt }, pricing, schedule }`, where `hours` is the status at the time asked and
/// `schedule` the weekly hours it was computed from.
public struct HubView: Encodable, Hashable, Sendable {
  public var hub: HubID
  public var name: String
  public var currency: String
  public var hours: HoursStatus
  public var pricing: PricingSettings
  public var schedule: OpeningHours

  public init(hub: Hub, now: Date) {
    self.hub = hub.id
    name = hub.name
    currency = hub.currency
    hours = hub.hours.status(at: now)
    pricing = hub.pricing
    schedule = hub.hours
  }
}
