import Foundation
import GrocerContracts

/// One line of a reservation: `{ "sku": "p1", "quantity": 2 }` (1…99).
public struct ReservationLine: Codable, Hashable, Sendable {
  public var sku: SKU
  public var quantity: Int

  public init(sku: SKU, quantity: Int) {
    self.sku = sku
    self.quantity = quantity
  }
}

/// The broker request OrderService sends at checkout:
/// `{ "orderId", "hub", "lines": [ { "sku", "quantity" } ], "correlationId"? }`, answered by a
/// `ReservationReply`. `correlationId` is the checkout's request id, carried into the events the
/// reservation causes.
public struct ReservationRequest: Codable, Hashable, Sendable {
  public var orderId: String
  public var hub: HubID
  public var lines: [ReservationLine]
  public var correlationId: String?

  public static let maximumLines = 100
  public static let quantityRange = 1...99

  public init(orderId: String, hub: HubID, lines: [ReservationLine], correlationId: String? = nil) {
    self.orderId = orderId
    self.hub = hub
    self.lines = lines
    self.correlationId = correlationId
  }

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

/// The answer to a `ReservationRequest`:
/// `{ "orderId", "status": "reserved" | "shortfall" | "rejected", "shortfall": [ { "sku",
/// "requested", "available" } ] | null, "expiresAt": time | null, "error": { "code", "detail" }
/// | null }`.
public struct ReservationReply: Codable, Hashable, Sendable {
  public enum Status: String, Codable, Hashable, Sendable {
    /// Everything is held until `expiresAt` (or committed already).
    case reserved
    /// Nothing is held; `shortfall` lists each line the hub cannot fill.
    case shortfall
    /// The request itself was refused (`error` says why); nothing is held.
    case rejected
  }

  /// One line the hub cannot fill, and how many it could give.
  public struct Shortfall: Codable, Hashable, Sendable {
    public var sku: SKU
    public var requested: Int
    public var available: Int

    public init(sku: SKU, requested: Int, available: Int) {
      self.sku = sku
      self.requested = requested
      self.available = available
    }
  }

  /// Why a request was rejected: a `DomainError`'s code and detail.
  public struct Failure: Codable, Hashable, Sendable {
    public var code: String
    public var detail: String

    public init(code: String, detail: String) {
      self.code = code
      self.detail = detail
    }
  }

  public var orderId: String
  public var status: Status
  public var shortfall: [Shortfall]?
  public var expiresAt: Date?
  public var error: Failure?

  public init(
    orderId: String, status: Status, shortfall: [Shortfall]? = nil, expiresAt: Date? = nil,
    error: Failure? = nil
  ) {
    self.orderId = orderId
    self.status = status
    self.shortfall = shortfall
    self.expiresAt = expiresAt
    self.error = error
  }

  public static func reserved(orderId: String, expiresAt: Date) -> Self {
    ReservationReply(orderId: orderId, status: .reserved, expiresAt: expiresAt)
  }

  public static func shortfall(orderId: String, _ lines: [Shortfall]) -> Self {
    ReservationReply(orderId: orderId, status: .shortfall, shortfall: lines)
  }

  public static func rejected(orderId: String, _ error: DomainError) -> Self {
    ReservationReply(
      orderId: orderId, status: .rejected, error: Failure(code: error.code, detail: error.detail))
  }

  public func encode(to encoder: any Encoder) throws {
    var container = encoder.container(keyedBy: CodingKeys.self)
    try container.encode(orderId, forKey: .orderId)
    try container.encode(status, forKey: .status)
    try container.encode(shortfall, forKey: .shortfall)
    try container.encode(expiresAt, forKey: .expiresAt)
    try container.encode(error, forKey: .error)
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
