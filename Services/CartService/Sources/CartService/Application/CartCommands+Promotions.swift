import Foundation
import GrocerContracts
import GrocerCore

extension CartCommands {
  /// Creates or replaces a promotion; carts holding it get a new version (their discount may
  /// have changed). Returns whether it was created.
  @discardableResult
  public func upsertPromotion(_ promo: Promotion, correlationID: String?) throws -> Bool {
    let body = try CartStore.promotionBody(promo)
    return try write { write in
      let existing = try self.store.storedPromotionBody(promo.code, in: write.db)
      if existing == body { return false }
      try self.store.savePromotion(promo, body: body, in: write.db)
      if existing != nil {
        for cart in try self.store.carts(holdingPromo: promo.code, in: write.db) {
          try self.saveVersion(
            cart.version + 1, user: cart.user, hub: cart.hub, promo: promo.code,
            reason: CartChangeReason.promo,
            correlationID: correlationID, in: write)
        }
      }
      return existing == nil
    }
  }

  /// Deletes a promotion; every cart holding it loses it with `promoRemoved`. False if unknown.
  public func deletePromotion(_ code: String, correlationID: String?) throws -> Bool {
    try write { write in
      guard try self.store.promotionExists(code, in: write.db) else { return false }
      try self.removePromo(code, correlationID: correlationID, in: write)
      try self.store.deletePromotion(code, in: write.db)
      return true
    }
  }

  /// Removes promotions that ran out from every cart holding them (`promoRemoved`). Returns how
  /// many carts changed.
  @discardableResult
  public func removeExpiredPromotions() throws -> Int {
    let now = clock.now()
    return try write { write in
      var changed = 0
      for code in try self.store.expiredCodesInCarts(at: now, in: write.db) {
        changed += try self.removePromo(code, correlationID: nil, in: write)
      }
      return changed
    }
  }

  /// Removes promo `code` from every cart holding it, with `promoRemoved`.
  @discardableResult
  private func removePromo(_ code: String, correlationID: String?, in write: Write) throws -> Int {
    let carts = try store.carts(holdingPromo: code, in: write.db)
    for cart in carts {
      let version = cart.version + 1
      try store.record(
        [.promoRemoved(code: code)], user: cart.user, hub: cart.hub, version: version, in: write.db)
      try saveVersion(
        version, user: cart.user, hub: cart.hub, promo: nil, reason: CartChangeReason.promo,
        correlationID: correlationID, in: write)
    }
    return carts.count
  }
}
