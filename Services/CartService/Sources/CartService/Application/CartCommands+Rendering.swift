import Foundation
import GrocerContracts
import GrocerCore
import GrocerStorage

extension CartCommands {
  /// A cart as rendered, and until when time alone leaves it as it is.
  struct Rendered {
    var view: CartView
    var freshUntil: Date
  }

  /// The whole priced cart as stored in this transaction, with every kept adjustment.
  /// `state` stands in for the cart's stored row (a version about to be saved).
  func render(
    user: String, hub: HubChanged, in db: any SQLConnection, as state: CartStore.CartRow? = nil
  ) throws -> Rendered {
    let cart = try state ?? store.cart(user: user, hub: hub.hub, in: db)
    let lines = try store.pricedLines(user: user, hub: hub.hub, in: db)
    let adjustments = try cart == nil ? [] : store.adjustments(user: user, hub: hub.hub, in: db)
    let promo = try cart?.promo.flatMap { try store.promotion($0, in: db) }
    return priced(hub: hub, version: cart?.version ?? 0, lines: lines, adjustments: adjustments, promo: promo)
  }

  /// The priced cart from its parts (now, with the hub's current hours).
  func priced(
    hub: HubChanged, version: Int64, lines: [CartPricing.Line], adjustments: [CartAdjustment],
    promo: Promotion?
  ) -> Rendered {
    let now = clock.now()
    let hours = hoursStatus(hub, at: now)
    let priced = CartPricing.price(
      lines, promo: promo,
      context: CartPricing.Context(
        hub: hub.hub, currency: hub.currency, pricing: hub.pricing, hours: hours, now: now))
    let view = CartView(
      hub: hub.hub, version: version, lines: priced.lines, adjustments: adjustments,
      promo: priced.promo,
      totals: priced.totals, blocker: priced.blocker)
    // The reply changes by itself when the hub opens or closes or the promo code runs out.
    var freshUntil = now.addingTimeInterval(replies.maximumAge)
    for moment in [hours.isOpen ? hours.closesAt : hours.opensAt, promo?.validUntil] {
      if let moment, moment > now, moment < freshUntil { freshUntil = moment }
    }
    return Rendered(view: view, freshUntil: freshUntil)
  }

  /// `hub.hours.status(at: now)`, remembered per hub version until it next changes (at most a
  /// minute, so a status far ahead is recomputed now and then).
  private func hoursStatus(_ hub: HubChanged, at now: Date) -> HoursStatus {
    let version = store.cachedVersion(ofHub: hub.hub) ?? -1
    if let cached = hoursCache.withLock({ $0[hub.hub] }), cached.version == version, now < cached.until {
      return cached.status
    }
    let status = hub.hours.status(at: now)
    var until = now.addingTimeInterval(60)
    if let change = status.isOpen ? status.closesAt : status.opensAt, change < until { until = change }
    hoursCache.withLock { $0[hub.hub] = (version, status, until) }
    return status
  }

  /// The cart rendered from the tables alone, bypassing remembered replies (for tests that check
  /// the replies built from memory against it).
  func renderedFromTables(user: String, hub: HubID) throws -> CartView {
    try store.database.read { db in
      try self.render(user: user, hub: try self.requireHub(hub, in: db), in: db).view
    }
  }
}
