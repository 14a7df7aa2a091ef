import Foundation
import GrocerContracts
import GrocerCore

extension CartCommands {
  /// The whole priced cart of `user` at `hub`, with the adjustments newer than `seenVersion`
  /// (all kept ones when nil). A user without a cart there gets an empty one at version 0.
  public func cart(user: String, hub: HubID, seenVersion: Int64?) throws -> CartView {
    let ticket = replies.ticket(hub: hub)
    let rendered = try store.database.read { db in
      let hubValue = try self.requireHub(hub, in: db)
      return try self.render(user: user, hub: hubValue, in: db)
    }
    replies.remember(rendered.view, user: user, freshUntil: rendered.freshUntil, ticket: ticket)
    return rendered.view.since(seenVersion)
  }

  /// Sets the quantity of `sku` (0 removes it), clamped to what the hub has (`QuantityChange`).
  /// A request that leaves the cart as it is changes nothing.
  public func setQuantity(
    user: String, hub: HubID, sku: SKU, quantity: Int, seenVersion: Int64?, correlationID: String?
  ) throws -> CartView {
    try QuantityChange.validate(quantity)
    return try write { write in
      let db = write.db
      let ticket = self.replies.ticket(hub: hub)
      let hubValue = try self.requireHub(hub, in: db)
      guard let product = try self.store.product(hub: hub, sku: sku, in: db) else {
        throw CartError.unknownProduct(sku)
      }
      let cart = try self.store.cart(user: user, hub: hub, in: db)
      let request = QuantityChange(
        sku: sku, requested: quantity, available: product.available,
        held: try self.store.lineQuantity(user: user, hub: hub, sku: sku, in: db))
      let last =
        request.needsLastAdjustment
        ? try self.store.lastAdjustment(user: user, hub: hub, sku: sku, in: db) : nil
      let promo = try cart?.promo.flatMap { try self.store.promotion($0, in: db) }
      // The remembered reply of the current version, when there is one, stands in for reading
      // every line again (exact: see `CartReplyCache.view`).
      let base = self.replies.view(user: user, hub: hub, version: cart?.version ?? 0)
      let rendered: Rendered
      if !request.changesCart(lastAdjustment: last) {
        rendered =
          try base.map {
            self.priced(
              hub: hubValue, version: $0.version, lines: $0.lines.map(CartPricing.Line.init),
              adjustments: $0.adjustments, promo: promo)
          } ?? self.render(user: user, hub: hubValue, in: db)
      } else {
        let version = (cart?.version ?? 0) + 1
        try self.store.setLine(
          user: user, hub: hub, sku: sku, quantity: request.quantity, version: version, in: db)
        if let change = request.adjustment {
          try self.store.record([change], user: user, hub: hub, version: version, in: db)
        }
        // Rendered as the new version before it is saved, so the event reuses its lines.
        if let base {
          let lines = request.lines(base.lines.map(CartPricing.Line.init), product: product)
          let adjustments =
            AdjustmentWindow.kept(base.adjustments, at: version) + request.adjustments(at: version)
          rendered = self.priced(
            hub: hubValue, version: version, lines: lines, adjustments: adjustments, promo: promo)
        } else {
          rendered = try self.render(
            user: user, hub: hubValue, in: db,
            as: CartStore.CartRow(user: user, hub: hub, version: version, promo: cart?.promo))
        }
        try self.saveVersion(
          version, user: user, hub: hub, promo: cart?.promo, reason: CartChangeReason.customer,
          correlationID: correlationID,
          lines: rendered.view.lines.map { CartChanged.Line(sku: $0.sku, quantity: $0.quantity) }, in: write)
      }
      self.store.database.afterCommit { [replies] in
        replies.remember(rendered.view, user: user, freshUntil: rendered.freshUntil, ticket: ticket)
      }
      return rendered.view.since(seenVersion)
    }
  }

  /// Puts promo `code` on the cart (nil removes it), as `PromoRequest` allows.
  public func setPromo(
    user: String, hub: HubID, code: String?, seenVersion: Int64?, correlationID: String?
  ) throws -> CartView {
    let now = clock.now()
    return try write { write in
      let db = write.db
      let hubValue = try self.requireHub(hub, in: db)
      let request = PromoRequest(code: code)
      let found = try request.lookup.flatMap { try self.store.promotion($0, in: db) }
      let normalized = try request.accepted(found, at: hub, now: now)
      let cart = try self.store.cart(user: user, hub: hub, in: db)
      if cart?.promo != normalized {
        try self.saveVersion(
          (cart?.version ?? 0) + 1, user: user, hub: hub, promo: normalized, reason: CartChangeReason.promo,
          correlationID: correlationID, in: write)
      }
      return try self.render(user: user, hub: hubValue, in: db).view.since(seenVersion)
    }
  }
}
