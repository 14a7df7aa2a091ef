import Foundation
import GrocerContracts

/// An in-memory hub stock ledger with reservations, built on `ReservationRules`: the reference
/// model of what `StockCommands` must do over SQLite, and usable as the in-memory store in tests.
public struct ReservationBook: Hashable, Sendable {
  /// On-hand counts per hub and SKU; a SKU absent here is unknown at that hub.
  public private(set) var onHand: [HubID: [SKU: Int]] = [:]
  public private(set) var reservations: [String: Reservation] = [:]
  public let timeToLive: TimeInterval

  /// A count that changed because a reservation was committed.
  public struct Movement: Hashable, Sendable {
    public var hub: HubID
    public var sku: SKU
    public var onHand: Int
  }

  public init(timeToLive: TimeInterval = ReservationRules.defaultTimeToLive) {
    self.timeToLive = timeToLive
  }

  public mutating func setOnHand(hub: HubID, sku: SKU, count: Int) {
    onHand[hub, default: [:]][sku] = count
  }

  /// On hand minus what holding reservations other than `excluding` hold; nil if unknown.
  public func available(hub: HubID, sku: SKU, now: Date, excluding orderId: String? = nil) -> Int? {
    guard let count = onHand[hub]?[sku] else { return nil }
    var held = 0
    for reservation in reservations.values
    where reservation.hub == hub && reservation.orderId != orderId && reservation.isHolding(at: now) {
      for line in reservation.lines where line.sku == sku { held += line.quantity }
    }
    return max(0, count - held)
  }

  /// Decides `request` and records a new hold.
  public mutating func reserve(_ request: ReservationRequest, now: Date) -> ReservationReply {
    var available: [SKU: Int] = [:]
    for line in request.lines {
      available[line.sku] = self.available(
        hub: request.hub, sku: line.sku, now: now, excluding: request.orderId)
    }
    let decision = ReservationRules.decide(
      request, existing: reservations[request.orderId], available: available, now: now, timeToLive: timeToLive
    )
    if case .hold(let reservation, _) = decision { reservations[reservation.orderId] = reservation }
    return decision.reply
  }

  /// `order.confirmed`: takes the held quantities off on hand (never below 0) and returns the
  /// counts that moved. A hold past its expiry that was not yet swept is still committed: the
  /// order is paid and the goods must go. Unknown, committed or released → no-op, `[]`.
  public mutating func commit(orderId: String) -> [Movement] {
    guard var reservation = reservations[orderId], reservation.state == .held else { return [] }
    reservation.state = .committed
    reservations[orderId] = reservation
    var moved: [Movement] = []
    for line in reservation.lines {
      guard let count = onHand[reservation.hub]?[line.sku] else { continue }
      let next = max(0, count - line.quantity)
      onHand[reservation.hub]?[line.sku] = next
      moved.append(Movement(hub: reservation.hub, sku: line.sku, onHand: next))
    }
    return moved
  }

  /// `order.declined` / `order.cancelled`: frees the hold. Returns whether anything changed;
  /// unknown, committed or released → no-op.
  @discardableResult
  public mutating func release(orderId: String) -> Bool {
    guard reservations[orderId]?.state == .held else { return false }
    reservations[orderId]?.state = .released
    return true
  }

  /// Marks every hold past its expiry released; returns their order ids, sorted.
  public mutating func expire(now: Date) -> [String] {
    let expired = reservations.values.filter { $0.state == .held && !$0.isHolding(at: now) }.map(\.orderId)
      .sorted()
    for orderId in expired { reservations[orderId]?.state = .released }
    return expired
  }
}
