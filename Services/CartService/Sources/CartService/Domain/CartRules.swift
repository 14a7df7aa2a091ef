import GrocerContracts
import GrocerCore

/// What a quantity request, a stock change, a reservation shortfall or an order does to a line or
/// a cart, as pure functions.
public enum CartRules {
  /// Quantities a customer may ask for; 0 removes the line.
  public static let quantityRange = 0...99

  /// A request for `requested` items where the hub has `available`: the quantity the cart
  /// holds, and the adjustment the server made (`reduced` or `outOfStock`) if it could not
  /// give all of it.
  public static func clamp(sku: SKU, requested: Int, available: Int) -> (
    quantity: Int, change: CartAdjustment.Change?
  ) {
    if requested <= max(available, 0) { return (requested, nil) }
    if available <= 0 { return (0, .outOfStock(sku: sku)) }
    return (available, .reduced(sku: sku, to: available))
  }

  /// A line holding `quantity` after its product changed from `oldPrice` to `event`: the
  /// quantity it keeps and the adjustments (fewer left, none left, a new price).
  public static func restock(
    quantity: Int, oldPrice: Money, event: StockChanged
  ) -> (quantity: Int, changes: [CartAdjustment.Change]) {
    var changes: [CartAdjustment.Change] = []
    var kept = quantity
    if event.available < quantity {
      let (clamped, change) = clamp(sku: event.sku, requested: quantity, available: event.available)
      kept = clamped
      if let change { changes.append(change) }
    }
    if kept > 0, oldPrice != event.price {
      changes.append(.priceChanged(sku: event.sku, from: oldPrice, to: event.price))
    }
    return (kept, changes)
  }

  /// A line holding `held` after a reservation found `count`: the quantity it keeps and the
  /// adjustment, or nil when StockService has enough (or the cart holds none).
  public static func shortfall(held: Int, count: CartCheckoutRequest.Count) -> (
    quantity: Int, change: CartAdjustment.Change?
  )? {
    guard held > 0, count.available < held else { return nil }
    return clamp(sku: count.sku, requested: held, available: max(0, count.available))
  }

  /// Whether a confirmed order empties the cart (its lines, promo and adjustments): not one that
  /// is empty already.
  public static func orderEmpties(hasLines: Bool, promo: String?) -> Bool {
    hasLines || promo != nil
  }

  /// The checkout question for `asked` against the cart at `current`: whether it matches, and
  /// whether the cart is then held as in checkout (an empty cart at version 0 never is).
  public static func checkout(asked: Int64?, current: Int64) -> (matches: Bool, holds: Bool) {
    let matches = asked == current
    return (matches, matches && current > 0)
  }
}
