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
}
