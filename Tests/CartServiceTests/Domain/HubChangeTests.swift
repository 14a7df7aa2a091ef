import Foundation
import GrocerContracts
import GrocerCore
import Testing

@testable import CartService

@Suite struct HubChangeTests {
  static let pricing = PricingSettings(
    minimumOrder: Money(minorUnits: 1000, currency: "EUR"),
    deliveryFee: Money(minorUnits: 299, currency: "EUR"))

  func hub(name: String = "Mitte", fee: Int = 299, currency: String = "EUR") -> HubChanged {
    var pricing = Self.pricing
    pricing.deliveryFee = Money(minorUnits: fee, currency: currency)
    return HubChanged(
      hub: Hub(
        id: "h1", name: name, hours: .daily(opens: .midnight, closes: .endOfDay), pricing: pricing,
        currency: currency))
  }

  @Test func newPricingGivesTheCartsANewVersion() {
    let change = HubChange(event: hub(fee: 399), version: 2, old: (1, hub()))
    #expect(change.isNewer)
    #expect(change.touchesCarts)
  }

  @Test func aNewNameAloneLeavesTheCartsAlone() {
    let change = HubChange(event: hub(name: "Berlin Mitte"), version: 2, old: (1, hub()))
    #expect(change.isNewer)
    #expect(!change.touchesCarts)
  }

  @Test func anOlderEventChangesNothing() {
    let change = HubChange(event: hub(fee: 399), version: 1, old: (1, hub()))
    #expect(!change.isNewer)
    #expect(!change.touchesCarts)
  }

  @Test func aHubTheCopyDidNotKnowHasNoCarts() {
    let change = HubChange(event: hub(), version: 1, old: nil)
    #expect(change.isNewer)
    #expect(!change.touchesCarts)
  }
}
