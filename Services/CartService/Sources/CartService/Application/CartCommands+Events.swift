import Foundation
import GrocerContracts
import GrocerCore

extension CartCommands {
  /// Applies `stock.changed`: the product copy, then every cart at that hub holding it. Returns
  /// how many carts got a new version. No inbox row: the copy's version is the guard, so the
  /// same event again, or an older one, changes nothing (as for a catalogue page).
  @discardableResult
  public func applyStockChanged(_ event: StockChanged, version: Int64, correlationID: String?) throws -> Int {
    let now = clock.now()
    return try write { write in
      try self.applyProduct(event, version: version, correlationID: correlationID, now: now, in: write)
    }
  }

  /// Applies `hub.changed`: the hub copy, then a new version for every non-empty cart at the hub
  /// when `HubChange` says their totals or blocker changed. Guarded by the copy's version, as
  /// `stock.changed` is.
  @discardableResult
  public func applyHubChanged(_ event: HubChanged, version: Int64, correlationID: String?) throws -> Int {
    try write { write in
      try self.applyHub(event, version: version, correlationID: correlationID, in: write)
    }
  }

  /// Applies `order.confirmed`: `user`'s cart at `hub` is emptied (lines, promo and kept
  /// adjustments) with a new version, as `CartRules.orderEmpties` says.
  @discardableResult
  public func applyOrderConfirmed(
    user: String, hub: HubID, messageID: String, consumer: String, correlationID: String?
  ) throws -> Bool {
    try once(messageID: messageID, consumer: consumer) { write, _ in
      guard let (cart, hasLines) = try self.store.cartHoldingLines(user: user, hub: hub, in: write.db) else {
        return 0
      }
      guard CartRules.orderEmpties(hasLines: hasLines, promo: cart.promo) else { return 0 }
      try self.store.empty(user: user, hub: hub, in: write.db)
      try self.saveVersion(
        cart.version + 1, user: user, hub: hub, promo: nil, reason: CartChangeReason.orderConfirmed,
        correlationID: correlationID, in: write)
      return 1
    } == 1
  }

  /// Applies a page of the catalogue snapshot: each value replaces the copy only if newer, and
  /// carts are adjusted exactly as the events would have.
  public func applyCatalogue(hubs: [Versioned<HubChanged>], products: [Versioned<StockChanged>]) throws {
    let now = clock.now()
    try write { write in
      for hub in hubs {
        _ = try self.applyHub(hub.value, version: hub.version, correlationID: nil, in: write)
      }
      for product in products {
        _ = try self.applyProduct(
          product.value, version: product.version, correlationID: nil, now: now, in: write)
      }
    }
  }

  /// Notes that the catalogue copy was filled from StockService.
  public func markCatalogueSynced() throws {
    let now = clock.now()
    try write { write in try self.store.markCatalogueSynced(at: now, in: write.db) }
  }

  /// A write that applies a consumed message once: its inbox row and its effect (the number of
  /// carts it changed) commit together; a message already processed changes nothing (0).
  private func once(
    messageID: String, consumer: String, _ effect: (Write, Date) throws -> Int
  ) throws -> Int {
    let now = clock.now()
    return try write { write in
      guard try self.store.claim(messageID: messageID, consumer: consumer, at: now, in: write.db) else {
        return 0
      }
      return try effect(write, now)
    }
  }

  /// The product copy takes `event` if it is newer; then each cart holding the product is
  /// changed as `StockChange` says.
  private func applyProduct(
    _ event: StockChanged, version: Int64, correlationID: String?, now: Date, in write: Write
  ) throws -> Int {
    let db = write.db
    // The copy takes the event only where it is newer, as `change.isNewer` says.
    let change = StockChange(
      event: event, version: version, old: try store.replaceProduct(event, version: version, in: db))
    guard change.touchesCarts else { return 0 }
    // Only the carts the change can touch are read: a busy product is in many carts, and most
    // hold less than is left.
    var changed = 0
    for (user, promo, holder) in try store.holders(
      hub: event.hub, sku: event.sku, above: change.holdersAbove, in: db)
    {
      guard let touch = change.touch(holder, now: now, checkoutHold: checkoutHold) else { continue }
      if let quantity = touch.quantity {
        try store.setLine(
          user: user, hub: event.hub, sku: event.sku, quantity: quantity, version: touch.version, in: db)
      }
      try store.record(touch.adjustments, user: user, hub: event.hub, version: touch.version, in: db)
      try saveVersion(
        touch.version, user: user, hub: event.hub, promo: promo, reason: touch.reason,
        correlationID: correlationID, in: write)
      changed += 1
    }
    return changed
  }

  /// The hub copy takes `event` if it is newer; then each non-empty cart at the hub gets a new
  /// version when `HubChange` says so.
  private func applyHub(_ event: HubChanged, version: Int64, correlationID: String?, in write: Write) throws
    -> Int
  {
    let change = HubChange(event: event, version: version, old: try store.storedHub(event.hub, in: write.db))
    guard change.isNewer else { return 0 }
    try store.saveHub(event, version: version, in: write.db)
    guard change.touchesCarts else { return 0 }
    write.changes.append(.hub(event.hub))
    let carts = try store.nonEmptyCarts(hub: event.hub, in: write.db)
    for cart in carts {
      try saveVersion(
        cart.version + 1, user: cart.user, hub: event.hub, promo: cart.promo, reason: CartChangeReason.hub,
        correlationID: correlationID, in: write)
    }
    return carts.count
  }
}
