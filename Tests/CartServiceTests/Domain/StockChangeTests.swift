import Foundation
import GrocerContracts
import GrocerCore
import Testing

@testable import CartService

@Suite struct StockChangeTests {
  static let old = CatalogueProduct(
    name: "Oat milk", currency: "EUR", price: 129, deposit: nil, available: 10, version: 3)
  static let now = Date(timeIntervalSince1970: 1_000_000)

  func event(available: Int, price: Int = 129, reason: String? = nil) -> StockChanged {
    StockChanged(
      hub: "h1", sku: "p1", name: "Oat milk", available: available,
      price: Money(minorUnits: price, currency: "EUR"), reason: reason)
  }

  func holder(_ quantity: Int, version: Int64 = 4, checkout: Int64? = nil, at: Double? = nil)
    -> StockChange.Holder
  {
    StockChange.Holder(quantity: quantity, version: version, checkoutVersion: checkout, checkoutAt: at)
  }

  @Test func anOlderOrRepeatedEventChangesNothing() {
    #expect(!StockChange(event: event(available: 1), version: 3, old: Self.old).isNewer)
    #expect(!StockChange(event: event(available: 1), version: 2, old: Self.old).touchesCarts)
    #expect(StockChange(event: event(available: 1), version: 4, old: Self.old).touchesCarts)
  }

  @Test func aProductTheCopyDidNotKnowIsInNoCart() {
    let change = StockChange(event: event(available: 1), version: 1, old: nil)
    #expect(change.isNewer)
    #expect(!change.touchesCarts)
  }

  @Test func aNewCountNoLineCanHoldMoreThanTouchesNoCartUnlessTheProductLooksDifferent() {
    let most = CartRules.quantityRange.upperBound
    #expect(StockChange(event: event(available: most - 1), version: 4, old: Self.old).touchesCarts)
    #expect(!StockChange(event: event(available: most), version: 4, old: Self.old).touchesCarts)
    #expect(!StockChange(event: event(available: 1_000_000), version: 4, old: Self.old).touchesCarts)
    #expect(StockChange(event: event(available: most, price: 149), version: 4, old: Self.old).touchesCarts)
  }

  @Test func aNewCountAloneReadsOnlyTheCartsHoldingMore() {
    #expect(StockChange(event: event(available: 2), version: 4, old: Self.old).holdersAbove == 2)
    #expect(StockChange(event: event(available: 2, price: 149), version: 4, old: Self.old).holdersAbove == -1)
  }

  @Test func aCartHoldingMoreThanIsLeftIsReducedWithANewVersion() {
    let change = StockChange(event: event(available: 2), version: 4, old: Self.old)
    let touch = change.touch(holder(5), now: Self.now, checkoutHold: 900)
    #expect(
      touch
        == StockChange.Touch(
          version: 5, quantity: 2, adjustments: [.reduced(sku: "p1", to: 2)], reason: "stock"))
  }

  @Test func aNewPriceTellsEveryHolderWithoutTouchingItsLine() {
    let change = StockChange(event: event(available: 10, price: 149), version: 4, old: Self.old)
    let touch = change.touch(holder(1), now: Self.now, checkoutHold: 900)
    #expect(
      touch
        == StockChange.Touch(
          version: 5, quantity: nil,
          adjustments: [
            .priceChanged(
              sku: "p1", from: Money(minorUnits: 129, currency: "EUR"),
              to: Money(minorUnits: 149, currency: "EUR"))
          ], reason: "price"))
  }

  @Test func aCartInCheckoutKeepsWhatItsReservationTook() {
    let change = StockChange(event: event(available: 0, reason: "reservation"), version: 4, old: Self.old)
    let inCheckout = holder(3, version: 4, checkout: 4, at: Self.now.timeIntervalSince1970 - 60)
    #expect(change.touch(inCheckout, now: Self.now, checkoutHold: 900) == nil)
    let heldTooLong = holder(3, version: 4, checkout: 4, at: Self.now.timeIntervalSince1970 - 901)
    #expect(change.touch(heldTooLong, now: Self.now, checkoutHold: 900)?.quantity == 0)
    let changedSince = holder(3, version: 5, checkout: 4, at: Self.now.timeIntervalSince1970 - 60)
    #expect(
      change.touch(changedSince, now: Self.now, checkoutHold: 900)?.adjustments == [.outOfStock(sku: "p1")])
  }

  @Test func aReservationThatAlsoChangedThePriceSparesNoCart() {
    let change = StockChange(
      event: event(available: 0, price: 149, reason: "reservation"), version: 4, old: Self.old)
    let inCheckout = holder(3, version: 4, checkout: 4, at: Self.now.timeIntervalSince1970 - 60)
    #expect(change.touch(inCheckout, now: Self.now, checkoutHold: 900)?.quantity == 0)
  }

  @Test func aNewNameAloneStillGivesTheHoldersANewVersion() {
    var renamed = event(available: 10)
    renamed.name = "Oat drink"
    let touch = StockChange(event: renamed, version: 4, old: Self.old).touch(
      holder(1), now: Self.now, checkoutHold: 900)
    #expect(touch == StockChange.Touch(version: 5, quantity: nil, adjustments: [], reason: "price"))
  }

  @Test func aCountStillAboveTheLineLeavesTheCartAlone() {
    let change = StockChange(event: event(available: 4), version: 4, old: Self.old)
    #expect(change.touch(holder(4), now: Self.now, checkoutHold: 900) == nil)
  }
}
