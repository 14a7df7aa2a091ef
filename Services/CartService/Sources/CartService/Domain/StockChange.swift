import Foundation
import GrocerContracts
import GrocerCore

/// What a `stock.changed` does to the catalogue copy and to each cart holding the product.
///
/// A count taken by a reservation (`reason == "reservation"`) leaves alone the carts in checkout
/// at their current version, most likely the very cart being ordered, which the order's outcome
/// empties or leaves as it was; every other cart is adjusted at once.
struct StockChange: Sendable {
  var event: StockChanged
  var version: Int64
  /// The copy before the event; nil for a product the copy did not know.
  var old: CatalogueProduct?

  /// One cart holding the product, as stored.
  struct Holder: Hashable, Sendable {
    var quantity: Int
    var version: Int64
    var checkoutVersion: Int64?
    var checkoutAt: Double?
  }

  /// What to record on one cart: its new version, the line's new quantity (nil: as it is), the
  /// adjustments and the reason of its `cart.changed`.
  struct Touch: Hashable, Sendable {
    var version: Int64
    var quantity: Int?
    var adjustments: [CartAdjustment.Change]
    var reason: String
  }

  /// Whether the copy takes the event: it is newer than what the copy holds.
  var isNewer: Bool { old.map { $0.version < version } ?? true }

  /// Whether any cart may change: a product the copy did not know is in no cart, and a new count
  /// alone that a line could not hold more than (`CartRules.quantityRange`) leaves every line
  /// as it is, so its holders need not be read.
  var touchesCarts: Bool {
    isNewer && old != nil && (looksChanged || event.available < CartRules.quantityRange.upperBound)
  }

  /// Whether what a cart shows of the product (name, price, deposit) changed, not only its count.
  var looksChanged: Bool {
    guard let old else { return false }
    return old.name != event.name || old.price != event.price.minorUnits
      || old.currency != event.price.currency || old.deposit != event.deposit?.minorUnits
  }

  /// Only carts holding more than this are touched: a new count alone changes only the lines
  /// above it, while a new look changes every line.
  var holdersAbove: Int { looksChanged ? -1 : event.available }

  /// What the event does to `holder` at `now`, where a cart in checkout keeps its counts for
  /// `checkoutHold`; nil when it leaves the cart as it is.
  func touch(_ holder: Holder, now: Date, checkoutHold: TimeInterval) -> Touch? {
    guard let old else { return nil }
    let looksChanged = self.looksChanged
    // Only a count is spared: a new price, name or deposit changes what the cart shows.
    if event.reason == "reservation", !looksChanged, holder.checkoutVersion == holder.version,
      let at = holder.checkoutAt, now.timeIntervalSince1970 - at < checkoutHold
    {
      return nil
    }
    let (kept, changes) = CartRules.restock(quantity: holder.quantity, oldPrice: old.priceMoney, event: event)
    guard kept != holder.quantity || !changes.isEmpty || looksChanged else { return nil }
    return Touch(
      version: holder.version + 1, quantity: kept != holder.quantity ? kept : nil, adjustments: changes,
      reason: kept != holder.quantity ? CartChangeReason.stock : CartChangeReason.price)
  }
}
