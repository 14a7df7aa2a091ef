import Foundation
import GrocerContracts

extension ReservationRequest {
  /// Order id and hub follow `Identifier`; 1–100 lines, valid SKUs, each quantity 1…99, no SKU
  /// twice. Returns the lines sorted by SKU (the form compared for idempotency and stored).
  public func validate() throws(DomainError) -> [ReservationLine] {
    guard Identifier.isValid(orderId) else { throw .invalidOrderID(orderId) }
    try Identifier.validateHub(hub)
    guard (1...Self.maximumLines).contains(lines.count) else { throw .invalidLineCount(lines.count) }
    var seen = Set<SKU>(minimumCapacity: lines.count)
    for line in lines {
      try Identifier.validateSKU(line.sku)
      guard Self.quantityRange.contains(line.quantity) else {
        throw .invalidQuantity(sku: line.sku, quantity: line.quantity)
      }
      guard seen.insert(line.sku).inserted else { throw .duplicateLine(line.sku) }
    }
    return lines.sorted { $0.sku < $1.sku }
  }
}

extension ReservationReply {
  public static func rejected(orderId: String, _ error: DomainError) -> Self {
    ReservationReply(
      orderId: orderId, status: .rejected, error: Failure(code: error.code, detail: error.detail))
  }
}

/// A hold on stock for one order, keyed by order id.
///
/// `held` → `committed` (order confirmed: on hand goes down by the lines) or `released`
/// (declined, cancelled, or `expiresAt` passed with no outcome). A held reservation past
/// `expiresAt` no longer holds anything, even before a sweep marks it released.
public struct Reservation: Codable, Hashable, Sendable {
  public enum State: String, Codable, Hashable, Sendable {
    case held, committed, released
  }

  public var orderId: String
  public var hub: HubID
  /// Sorted by SKU (as `ReservationRequest.validate` returns them).
  public var lines: [ReservationLine]
  public var state: State
  public var createdAt: Date
  public var expiresAt: Date

  public init(
    orderId: String, hub: HubID, lines: [ReservationLine], state: State, createdAt: Date, expiresAt: Date
  ) {
    self.orderId = orderId
    self.hub = hub
    self.lines = lines
    self.state = state
    self.createdAt = createdAt
    self.expiresAt = expiresAt
  }

  /// Whether it keeps its quantities from others at `now`.
  public func isHolding(at now: Date) -> Bool { state == .held && now < expiresAt }
}

/// What to do with a reservation request.
public enum ReservationDecision: Hashable, Sendable {
  /// Store this new held reservation (in the same transaction as the reply), then send `reply`.
  case hold(Reservation, reply: ReservationReply)
  /// Store nothing; send `reply` (a replay, a shortfall or a rejection).
  case answer(ReservationReply)

  public var reply: ReservationReply {
    switch self {
    case .hold(_, let reply), .answer(let reply): reply
    }
  }
}

/// The reservation rule, free of storage: all-or-nothing, idempotent per order id.
public enum ReservationRules {
  /// How long a hold lasts without an outcome.
  public static let defaultTimeToLive: TimeInterval = 600

  /// The answer to a request for an order whose decline or cancellation came before it
  /// (`releaseReason` of what is stored under its id is `ReleaseReason.outcomeFirst`): the request
  /// is late, and nothing may be held for it. Nil for any other request.
  public static func lateRequestReply(_ request: ReservationRequest, releaseReason: String?)
    -> ReservationReply?
  {
    guard releaseReason == ReleaseReason.outcomeFirst else { return nil }
    return .rejected(orderId: request.orderId, .reservationReleased(orderId: request.orderId))
  }

  /// Decides a request.
  ///
  /// - `existing`: the reservation stored under `request.orderId`, if any.
  /// - `available`: per requested SKU, on hand minus what other *holding* reservations hold
  ///   (`Reservation.isHolding(at: now)`). A SKU missing from it is unknown at this hub and
  ///   counts as 0 available, so it shows up in the shortfall with `available: 0`.
  ///
  /// Asking again with the same lines (in any order) replays: `reserved` with the first
  /// `expiresAt` while held or committed, `rejected`/`reservationReleased` once released or
  /// expired. Different lines or hub for the same order → `rejected`/`reservationConflict`.
  /// A shortfall stores nothing, so asking again re-evaluates.
  public static func decide(
    _ request: ReservationRequest, existing: Reservation?, available: [SKU: Int], now: Date,
    timeToLive: TimeInterval = defaultTimeToLive
  ) -> ReservationDecision {
    let lines: [ReservationLine]
    do {
      lines = try request.validate()
    } catch {
      return .answer(.rejected(orderId: request.orderId, error))
    }
    if let existing {
      guard existing.hub == request.hub, existing.lines == lines else {
        return .answer(.rejected(orderId: request.orderId, .reservationConflict(orderId: request.orderId)))
      }
      switch existing.state {
      case .committed:
        return .answer(.reserved(orderId: request.orderId, expiresAt: existing.expiresAt))
      case .held where existing.isHolding(at: now):
        return .answer(.reserved(orderId: request.orderId, expiresAt: existing.expiresAt))
      case .held, .released:
        return .answer(.rejected(orderId: request.orderId, .reservationReleased(orderId: request.orderId)))
      }
    }
    var short: [ReservationReply.Shortfall] = []
    for line in request.lines {
      let count = max(0, available[line.sku] ?? 0)
      if count < line.quantity {
        short.append(.init(sku: line.sku, requested: line.quantity, available: count))
      }
    }
    if !short.isEmpty { return .answer(.shortfall(orderId: request.orderId, short)) }
    let expiresAt = now.addingTimeInterval(timeToLive)
    let reservation = Reservation(
      orderId: request.orderId, hub: request.hub, lines: lines, state: .held, createdAt: now,
      expiresAt: expiresAt)
    return .hold(reservation, reply: .reserved(orderId: request.orderId, expiresAt: expiresAt))
  }
}
