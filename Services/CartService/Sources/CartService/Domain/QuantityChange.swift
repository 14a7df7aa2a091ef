import GrocerContracts
import GrocerCore

/// What a customer's request for a quantity of one product does to the cart as stored: the
/// quantity the line keeps, the clamp the server made, and whether the cart changes at all.
///
/// A request that leaves the cart as it is (the same quantity, the same clamp as last time)
/// changes nothing, so a repeated request adds neither a version nor an adjustment.
struct QuantityChange: Hashable, Sendable {
  var sku: SKU
  /// What the line holds after the request (0: no line).
  var quantity: Int
  /// The clamp (`reduced`, `outOfStock`) when the hub could not give all that was asked for.
  var adjustment: CartAdjustment.Change?
  /// What the line held before.
  var held: Int

  /// A request for `requested` of `sku` where the hub has `available` and the cart holds `held`.
  init(sku: SKU, requested: Int, available: Int, held: Int) {
    let (quantity, adjustment) = CartRules.clamp(sku: sku, requested: requested, available: available)
    self.sku = sku
    self.quantity = quantity
    self.adjustment = adjustment
    self.held = held
  }

  /// Refuses a quantity no customer may ask for, before anything is read.
  static func validate(_ requested: Int) throws(CartError) {
    guard CartRules.quantityRange.contains(requested) else { throw .quantityOutOfRange(requested) }
  }

  /// Whether the answer depends on the line's newest adjustment: the same quantity clamped
  /// again is a repeat only if the last clamp was this one.
  var needsLastAdjustment: Bool { quantity == held && adjustment != nil }

  /// Whether the cart changes, given the line's newest kept adjustment (only looked at when
  /// `needsLastAdjustment`).
  func changesCart(lastAdjustment: CartAdjustment.Change?) -> Bool {
    guard quantity == held else { return true }
    guard let adjustment else { return false }
    return lastAdjustment != adjustment
  }

  /// The adjustments recorded with the new `version`.
  func adjustments(at version: Int64) -> [CartAdjustment] {
    adjustment.map { [CartAdjustment($0, version: version)] } ?? []
  }

  /// The cart's lines after the request, from its lines before and the product as it is now:
  /// the line is replaced where it was, removed at 0, or added after the others.
  func lines(_ lines: [CartPricing.Line], product: CatalogueProduct) -> [CartPricing.Line] {
    var lines = lines
    let line = CartPricing.Line(
      sku: sku, name: product.name, quantity: quantity, unitPrice: product.priceMoney,
      deposit: product.depositMoney)
    if let index = lines.firstIndex(where: { $0.sku == sku }) {
      if quantity == 0 { lines.remove(at: index) } else { lines[index] = line }
    } else if quantity > 0 {
      lines.append(line)
    }
    return lines
  }
}
