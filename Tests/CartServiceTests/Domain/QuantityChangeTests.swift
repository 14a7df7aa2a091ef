import Foundation
import GrocerContracts
import GrocerCore
import Testing

@testable import CartService

@Suite struct QuantityChangeTests {
  static let milk = CatalogueProduct(
    name: "Oat milk", currency: "EUR", price: 129, deposit: 25, available: 3, version: 1)

  @Test func aNewQuantityChangesTheCart() {
    let request = QuantityChange(sku: "p1", requested: 2, available: 3, held: 1)
    #expect(request.quantity == 2)
    #expect(request.adjustment == nil)
    #expect(!request.needsLastAdjustment)
    #expect(request.changesCart(lastAdjustment: nil))
  }

  @Test func theSameQuantityWithinStockChangesNothing() {
    let request = QuantityChange(sku: "p1", requested: 2, available: 3, held: 2)
    #expect(!request.needsLastAdjustment)
    #expect(!request.changesCart(lastAdjustment: nil))
  }

  @Test func aRepeatOfTheSameClampChangesNothing() {
    let request = QuantityChange(sku: "p1", requested: 5, available: 3, held: 3)
    #expect(request.adjustment == .reduced(sku: "p1", to: 3))
    #expect(request.needsLastAdjustment)
    #expect(!request.changesCart(lastAdjustment: .reduced(sku: "p1", to: 3)))
  }

  @Test func aClampUnlikeTheLastOneIsRecordedAgain() {
    let request = QuantityChange(sku: "p1", requested: 5, available: 3, held: 3)
    #expect(request.changesCart(lastAdjustment: nil))
    #expect(request.changesCart(lastAdjustment: .reduced(sku: "p1", to: 4)))
    #expect(request.adjustments(at: 7) == [CartAdjustment(.reduced(sku: "p1", to: 3), version: 7)])
  }

  @Test func aQuantityOutsideTheRangeIsRefused() {
    #expect(throws: CartError.quantityOutOfRange(100)) { try QuantityChange.validate(100) }
    #expect(throws: CartError.quantityOutOfRange(-1)) { try QuantityChange.validate(-1) }
    #expect(throws: Never.self) { try QuantityChange.validate(0) }
  }

  @Test func aChangedLineIsReplacedWhereItWas() {
    let before = [line("p2", 1), line("p1", 1), line("p3", 1)]
    let after = QuantityChange(sku: "p1", requested: 2, available: 3, held: 1).lines(
      before, product: Self.milk)
    #expect(after.map(\.sku) == ["p2", "p1", "p3"])
    #expect(after[1].quantity == 2)
    #expect(after[1].unitPrice == Money(minorUnits: 129, currency: "EUR"))
    #expect(after[1].deposit == Money(minorUnits: 25, currency: "EUR"))
  }

  @Test func zeroRemovesTheLineAndANewLineGoesLast() {
    let before = [line("p1", 1), line("p2", 1)]
    let removed = QuantityChange(sku: "p1", requested: 0, available: 3, held: 1).lines(
      before, product: Self.milk)
    #expect(removed.map(\.sku) == ["p2"])
    let added = QuantityChange(sku: "p9", requested: 1, available: 3, held: 0).lines(
      before, product: Self.milk)
    #expect(added.map(\.sku) == ["p1", "p2", "p9"])
    let nothing = QuantityChange(sku: "p9", requested: 4, available: 0, held: 0).lines(
      before, product: Self.milk)
    #expect(nothing.map(\.sku) == ["p1", "p2"])
  }

  @Test func aCartKeepsTheAdjustmentsOfItsNewestVersionsOnly() {
    let adjustments = [99, 100, 101, 150].map { CartAdjustment(.outOfStock(sku: "p1"), version: $0) }
    #expect(AdjustmentWindow.kept(adjustments, at: 200).map(\.version) == [101, 150])
    #expect(AdjustmentWindow.kept(adjustments, at: 100).map(\.version) == [99, 100, 101, 150])
    #expect(AdjustmentWindow.droppedThrough(at: 100) == nil)
    #expect(AdjustmentWindow.droppedThrough(at: 101) == 1)
  }

  func line(_ sku: SKU, _ quantity: Int) -> CartPricing.Line {
    CartPricing.Line(
      sku: sku, name: sku, quantity: quantity, unitPrice: Money(minorUnits: 100, currency: "EUR"))
  }
}

@Suite struct CartViewSinceTests {
  @Test func aReplyListsOnlyTheAdjustmentsNewerThanTheVersionSeen() {
    let zero = Money(minorUnits: 0, currency: "EUR")
    let view = CartView(
      hub: "h1", version: 5, lines: [],
      adjustments: [3, 4, 5].map { CartAdjustment(.outOfStock(sku: "p\($0)"), version: $0) }, promo: nil,
      totals: CartTotals(
        subtotal: zero, deposit: zero, deliveryFee: zero, smallBasketFee: zero, discount: zero, total: zero),
      blocker: nil)
    #expect(view.since(nil).adjustments.map(\.version) == [3, 4, 5])
    #expect(view.since(3).adjustments.map(\.version) == [4, 5])
    #expect(view.since(5).adjustments.isEmpty)
  }
}
