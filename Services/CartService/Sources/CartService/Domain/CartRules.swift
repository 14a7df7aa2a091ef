import GrocerContracts
import GrocerCore

/// What a quantity request or a stock change does to one line, as pure functions.
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
}
