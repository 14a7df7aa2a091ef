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
/// `{ "orderId", "hub", "lines": [ { "sku", "quantity" } ], "deliverTo"?, "correlationId"? }`,
/// answered by a `ReservationReply`. `deliverTo` is where the order goes: outside the hub's
/// delivery area the request is refused (`outsideDeliveryArea`). `correlationId` is the
/// checkout's request id, carried into the events the reservation causes.
public struct ReservationRequest: Codable, Hashable, Sendable {
  public var orderId: String
  public var hub: HubID
  public var lines: [ReservationLine]
  public var deliverTo: GeoPoint?
  public var correlationId: String?

  public static let maximumLines = 100
  public static let quantityRange = 1...99

  public init(
    orderId: String, hub: HubID, lines: [ReservationLine], deliverTo: GeoPoint? = nil,
    correlationId: String? = nil
  ) {
    self.orderId = orderId
    self.hub = hub
    self.lines = lines
    self.deliverTo = deliverTo
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
    if let deliverTo {
      out.key("deliverTo")
      deliverTo.write(into: &out)
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

extension ReservationLine {
  /// Lines as JSON written by hand (StockService stores each reservation's lines so): the bytes
  /// `JSON.encode(lines)` writes.
  public static func jsonBytes(_ lines: [ReservationLine]) -> [UInt8] {
    var out = JSONBytes(capacity: 2 + lines.count * 40)
    out.beginArray()
    for line in lines { out.skuQuantity(sku: line.sku, quantity: line.quantity) }
    out.endArray()
    return out.bytes
  }
}

extension ReservationReply {
  /// The reply's JSON written by hand (one per checkout): the bytes `JSON.encode(self)` writes,
  /// absent values as `null`.
  public var jsonBytes: [UInt8] {
    var out = JSONBytes(capacity: 128 + (shortfall?.count ?? 0) * 60)
    out.beginObject()
    out.key("error")
    if let error { error.write(into: &out) } else { out.null() }
    out.key("expiresAt")
    if let expiresAt { out.date(expiresAt) } else { out.null() }
    out.key("orderId")
    out.string(orderId)
    out.key("shortfall")
    if let shortfall {
      out.beginArray()
      for line in shortfall {
        out.beginObject()
        out.key("available")
        out.int(line.available)
        out.key("requested")
        out.int(line.requested)
        out.key("sku")
        out.string(line.sku)
        out.endObject()
      }
      out.endArray()
    } else {
      out.null()
    }
    out.key("status")
    out.string(status.rawValue)
    out.endObject()
    return out.bytes
  }
}

// MARK: - Read by hand (one request and one reply per checkout)

extension ReservationRequest: JSONReadable {
  public init(reading reader: inout JSONReader) throws {
    var orderId: String?
    var hub: HubID?
    var lines: [ReservationLine]?
    var correlationId: String?
    var deliverTo: GeoPoint?
    try reader.readObject { reader, key in
      switch key {
      case "orderId": orderId = try reader.readString()
      case "hub": hub = try reader.readString()
      case "correlationId": correlationId = reader.readNull() ? nil : try reader.readString()
      case "deliverTo": deliverTo = reader.readNull() ? nil : try GeoPoint(reading: &reader)
      case "lines":
        var read: [ReservationLine] = []
        try reader.readArray { reader in
          var sku: SKU?
          var quantity: Int?
          try reader.readObject { reader, key in
            switch key {
            case "sku": sku = try reader.readString()
            case "quantity": quantity = try reader.readInt()
            default: try reader.skipValue()
            }
          }
          guard let sku, let quantity else { throw JSONReader.Failure("a line needs sku and quantity") }
          read.append(ReservationLine(sku: sku, quantity: quantity))
        }
        lines = read
      default: try reader.skipValue()
      }
    }
    guard let orderId, let hub, let lines else {
      throw JSONReader.Failure("a reservation request needs orderId, hub and lines")
    }
    self.init(orderId: orderId, hub: hub, lines: lines, deliverTo: deliverTo, correlationId: correlationId)
  }
}

extension ReservationReply: JSONReadable {
  public init(reading reader: inout JSONReader) throws {
    var orderId: String?
    var status: Status?
    var shortfall: [Shortfall]?
    var expiresAt: Date?
    var error: RemoteError?
    try reader.readObject { reader, key in
      switch key {
      case "orderId": orderId = try reader.readString()
      case "status": status = Status(rawValue: try reader.readString())
      case "expiresAt": expiresAt = reader.readNull() ? nil : try reader.readDate()
      case "error": error = reader.readNull() ? nil : try RemoteError(reading: &reader)
      case "shortfall":
        if reader.readNull() { return }
        var lines: [Shortfall] = []
        try reader.readArray { reader in
          var sku: SKU?
          var requested: Int?
          var available: Int?
          try reader.readObject { reader, key in
            switch key {
            case "sku": sku = try reader.readString()
            case "requested": requested = try reader.readInt()
            case "available": available = try reader.readInt()
            default: try reader.skipValue()
            }
          }
          guard let sku, let requested, let available else {
            throw JSONReader.Failure("a shortfall needs sku, requested and available")
          }
          lines.append(Shortfall(sku: sku, requested: requested, available: available))
        }
        shortfall = lines
      default: try reader.skipValue()
      }
    }
    guard let orderId, let status else {
      throw JSONReader.Failure("a reservation reply needs orderId and a known status")
    }
    self.init(orderId: orderId, status: status, shortfall: shortfall, expiresAt: expiresAt, error: error)
  }
}
