import Foundation
import GrocerContracts
import GrocerCore

extension CartCommands {
  /// For the checkout question: the priced cart, and whether it is still `version`. When it is,
  /// the cart is marked as in checkout at that version (see `StockChange`).
  public func checkout(user: String, hub: HubID, version: Int64?) throws -> (cart: CartView, matches: Bool) {
    let now = clock.now()
    return try write { write in
      let hubValue = try self.requireHub(hub, in: write.db)
      let view = try self.render(user: user, hub: hubValue, in: write.db).view.since(version)
      let (matches, holds) = CartRules.checkout(asked: version, current: view.version)
      if holds {
        try self.store.markCheckout(user: user, hub: hub, version: view.version, at: now, in: write.db)
      }
      return (view, matches)
    }
  }

  /// After a reservation shortfall: clamps `user`'s cart at `hub` to the counts StockService
  /// reported (`CartRules.shortfall`), with adjustments and a new version if anything moved.
  public func applyCounts(
    user: String, hub: HubID, counts: [CartCheckoutRequest.Count], correlationID: String?
  ) throws -> CartView {
    try write { write in
      let db = write.db
      let hubValue = try self.requireHub(hub, in: db)
      guard let cart = try self.store.cart(user: user, hub: hub, in: db) else {
        return try self.render(user: user, hub: hubValue, in: db).view
      }
      let version = cart.version + 1
      var changes: [CartAdjustment.Change] = []
      for count in counts {
        let held = try self.store.lineQuantity(user: user, hub: hub, sku: count.sku, in: db)
        guard let clamped = CartRules.shortfall(held: held, count: count) else { continue }
        try self.store.setLine(
          user: user, hub: hub, sku: count.sku, quantity: clamped.quantity, version: version, in: db)
        if let change = clamped.change { changes.append(change) }
      }
      guard !changes.isEmpty else {
        return try self.render(user: user, hub: hubValue, in: db).view
      }
      try self.store.record(changes, user: user, hub: hub, version: version, in: db)
      try self.saveVersion(
        version, user: user, hub: hub, promo: cart.promo, reason: CartChangeReason.shortfall,
        correlationID: correlationID,
        in: write)
      return try self.render(user: user, hub: hubValue, in: db).view
    }
  }
}
