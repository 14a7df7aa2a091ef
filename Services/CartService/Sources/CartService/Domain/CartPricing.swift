import Foundation
import GrocerContracts
import GrocerCore

/// The pricing rules of SPEC.md's CartService, as one pure function from a cart's lines, its
/// hub's settings and promo to the whole priced cart. Every amount is in integer minor units.
///
/// - subtotal = Σ unit price × quantity; deposit = Σ deposit × quantity, apart, added to the total.
/// - The delivery fee is waived when the subtotal (before any discount) reaches
///   `freeDeliveryFrom`; the small-basket fee applies while the subtotal is below its `below`.
/// - One promo: a percentage of the subtotal rounded half away from zero, or a fixed amount;
///   never more than the subtotal, never off fees or deposit. One whose condition fails gives
///   no discount and a notice.
/// - total = subtotal − discount + deposit + delivery fee + small-basket fee.
/// - Blockers: a closed hub (`hubClosed` with when it opens) first, then a subtotal below the
///   minimum order (`belowMinimum` with the missing amount).
/// - An empty cart owes nothing: every total is zero (no delivery, no small-basket fee); it is
///   still blocked below a minimum order.
public enum CartPricing {
  /// One line as priced now.
  public struct Line: Hashable, Sendable {
    public var sku: SKU
    public var name: String
    public var quantity: Int
    public var unitPrice: Money
    public var deposit: Money?

    public init(sku: SKU, name: String, quantity: Int, unitPrice: Money, deposit: Money? = nil) {
      self.sku = sku
      self.name = name
      self.quantity = quantity
      self.unitPrice = unitPrice
      self.deposit = deposit
    }
  }

  /// Everything the totals depend on besides the lines.
  public struct Context: Hashable, Sendable {
    public var hub: HubID
    public var currency: String
    public var pricing: PricingSettings
    public var hours: HoursStatus
    public var now: Date

    public init(hub: HubID, currency: String, pricing: PricingSettings, hours: HoursStatus, now: Date) {
      self.hub = hub
      self.currency = currency
      self.pricing = pricing
      self.hours = hours
      self.now = now
    }
  }

  /// The priced lines, totals, promo and blocker.
  public struct Result: Hashable, Sendable {
    public var lines: [CartLineView]
    public var totals: CartTotals
    public var promo: CartPromoView?
    public var blocker: CartBlocker?
  }

  public static func price(_ lines: [Line], promo: Promotion?, context: Context) -> Result {
    let currency = context.currency
    var subtotal = 0
    var deposit = 0
    var views: [CartLineView] = []
    views.reserveCapacity(lines.count)
    for line in lines {
      let lineTotal = line.unitPrice.minorUnits * line.quantity
      subtotal += lineTotal
      deposit += (line.deposit?.minorUnits ?? 0) * line.quantity
      views.append(
        CartLineView(
          sku: line.sku, name: line.name, quantity: line.quantity, unitPrice: line.unitPrice,
          deposit: line.deposit, lineTotal: Money(minorUnits: lineTotal, currency: currency)))
    }
    let pricing = context.pricing
    let isEmpty = lines.isEmpty
    var deliveryFee = isEmpty ? 0 : pricing.deliveryFee.minorUnits
    if let free = pricing.freeDeliveryFrom, subtotal >= free.minorUnits { deliveryFee = 0 }
    var smallBasketFee = 0
    if !isEmpty, let smallBasket = pricing.smallBasket, subtotal < smallBasket.below.minorUnits {
      smallBasketFee = smallBasket.fee.minorUnits
    }

    var discount = 0
    var promoView: CartPromoView?
    if let promo {
      switch promo.evaluate(
        subtotal: Money(minorUnits: subtotal, currency: currency), hub: context.hub, now: context.now)
      {
      case .discount(let off):
        discount = off.minorUnits
        promoView = CartPromoView(
          code: promo.code, description: promo.description, applied: true, notice: nil)
      case .notApplied(let notice):
        promoView = CartPromoView(
          code: promo.code, description: promo.description, applied: false, notice: notice)
      }
    }

    var blocker: CartBlocker?
    if !context.hours.isOpen {
      blocker = .hubClosed(opensAt: context.hours.opensAt)
    } else if subtotal < pricing.minimumOrder.minorUnits {
      blocker = .belowMinimum(
        missing: Money(minorUnits: pricing.minimumOrder.minorUnits - subtotal, currency: currency))
    }

    func money(_ units: Int) -> Money { Money(minorUnits: units, currency: currency) }
    let totals = CartTotals(
      subtotal: money(subtotal), deposit: money(deposit), deliveryFee: money(deliveryFee),
      smallBasketFee: money(smallBasketFee), discount: money(discount),
      total: money(subtotal - discount + deposit + deliveryFee + smallBasketFee))
    return Result(lines: views, totals: totals, promo: promoView, blocker: blocker)
  }
}
