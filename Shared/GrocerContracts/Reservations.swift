import Foundation
import GrocerCore

/// Request/reply on the queue `stock.reservations`: OrderService asks StockService to hold an
/// order's lines (all or nothing, keyed by order id, so asking twice is harmless).
public enum ReservationQueue {
  public static let name = "stock.reservations"
}

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

  /// Why a request was rejected: a stable code and a sentence.
  public typealias Failure = RemoteError

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

  public func encode(to encoder: any Encoder) throws {
    var container = encoder.container(keyedBy: CodingKeys.self)
    try container.encode(orderId, forKey: .orderId)
    try container.encode(status, forKey: .status)
    try container.encode(shortfall, forKey: .shortfall)
    try container.encode(expiresAt, forKey: .expiresAt)
    try container.encode(error, forKey: .error)
  }
}

extension ReservationRequest {
  /// The request's JSON written by hand (one per checkout): the bytes `JSON.encode(self)` writes.
  public var jsonBytes: [UInt8] {
    var out = JSONBytes(capacity: 128 + lines.count * 40)
    out.beginObject()
    if let correlationId {
      out.key("correlationId")
      out.string(correlationId)
    }
    out.key("hub")
    out.string(hub)
    out.key("lines")
    out.beginArray()
    for line in lines { out.skuQuantity(sku: line.sku, quantity: line.quantity) }
    out.endArray()
    out.key("orderId")
    out.string(orderId)
    out.endObject()
    return out.bytes
  }
}
