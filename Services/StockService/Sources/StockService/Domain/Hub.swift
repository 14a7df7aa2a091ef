import Foundation
import GrocerCore

/// A hub (dark store): its name, opening hours, delivery pricing and the currency it prices in.
///
/// Wire shape (also the payload of `hub.changed`, with `id` as `hub`): see `HubChanged`.
public struct Hub: Codable, Hashable, Sendable {
  public var id: HubID
  public var name: String
  public var hours: OpeningHours
  public var pricing: PricingSettings
  /// ISO 4217 code every price of this hub is in.
  public var currency: String

  public init(id: HubID, name: String, hours: OpeningHours, pricing: PricingSettings, currency: String) {
    self.id = id
    self.name = name
    self.hours = hours
    self.pricing = pricing
    self.currency = currency
  }

  /// Checks every rule a stored hub follows.
  public func validate() throws(DomainError) {
    try Identifier.validateHub(id)
    try HubUpsert.validateName(name)
    try MoneyRules.validateCurrency(currency)
    try hours.validate()
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
