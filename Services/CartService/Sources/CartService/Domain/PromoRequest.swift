import Foundation
import GrocerContracts
import GrocerCore

/// A customer's request to put a promo code on the cart (nil takes it off), checked against the
/// promotion it names: unknown, expired or not valid at the hub is refused; a minimum subtotal
/// not reached yet is kept (pricing shows the notice).
struct PromoRequest: Hashable, Sendable {
  var code: String?

  /// The stored form of the code, to look its promotion up; nil when the request takes the code
  /// off or when no promotion can have such a code.
  var lookup: String? { code.flatMap(Promotion.normalize) }

  /// The code the cart holds after the request, given the promotion `lookup` found.
  func accepted(_ promo: Promotion?, at hub: HubID, now: Date) throws(CartError) -> String? {
    guard let code else { return nil }
    guard let lookup, let promo else { throw .unknownPromotion(code.trimmingCharacters(in: .whitespaces)) }
    guard !promo.hasExpired(at: now) else { throw .promotionExpired(promo.code) }
    guard promo.isValid(at: hub) else { throw .promotionNotValidAtHub(code: promo.code, hub: hub) }
    return lookup
  }
}
