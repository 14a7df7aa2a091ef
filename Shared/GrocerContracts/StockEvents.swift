import Foundation
import GrocerCore

/// Event type names (= routing keys on `grocer.events`) StockService publishes or consumes.
public enum StockEventType {
  public static let stockChanged = "stock.changed"
  public static let hubChanged = "hub.changed"
  /// A hub's catalogue screens changed (tree, home layout, or a product's catalogue fields):
  /// StockService replicas rebuild what they keep of that hub's catalogue in memory.
  public static let catalogueChanged = "catalogue.changed"
  public static let orderConfirmed = "order.confirmed"
  public static let orderDeclined = "order.declined"
  public static let orderCancelled = "order.cancelled"
  /// The order outcomes this service binds its queue to.
  public static let orderOutcomes: [String] = [orderConfirmed, orderDeclined, orderCancelled]
  /// Routing key of reservation requests (request/reply over the broker).
  public static let reservationRequested = "stock.reservation.requested"
  /// The `source` StockService writes into every envelope.
  public static let source = "stock-service"
}

/// Payload of `stock.changed`: the product's new count and price data, so CartService can
/// adjust carts and replicas can drop cached counts from the event alone.
///
/// Envelope `subject` is `hub/sku` (`StockChanged.subject`), `sequence` the product's version,
/// which rises on every change of count, price, deposit, name or unit price.
public struct StockChanged: Codable, Hashable, Sendable {
  public var hub: HubID
  public var sku: SKU
  public var name: String
  /// What can be ordered after the change: on hand minus what open reservations hold, never
  /// below 0.
  public var available: Int
  public var price: Money
  public var deposit: Money?
  public var unitPrice: UnitPrice?
  /// What moved it: an adjustment reason, `stockTake`, `product`, `reservation`, `created`.
  public var reason: String?

  public init(
    hub: HubID, sku: SKU, name: String, available: Int, price: Money, deposit: Money? = nil,
    unitPrice: UnitPrice? = nil, reason: String? = nil
  ) {
    self.hub = hub
    self.sku = sku
    self.name = name
    self.available = available
    self.price = price
    self.deposit = deposit
    self.unitPrice = unitPrice
    self.reason = reason
  }

  public static func subject(hub: HubID, sku: SKU) -> String { EventSubject.stock(hub: hub, sku: sku) }

  /// The event's message; `version` is the product's version after the change. Written in one
  /// pass by hand: every reservation publishes one per line (what Codable would cost:
  /// Benchmarks/codecs).
  public func message(
    id: String, occurredAt: Date, correlationId: String?, version: Int64
  ) -> OutgoingMessage {
    EventEnvelope.message(
      id: id, type: StockEventType.stockChanged, occurredAt: occurredAt, source: StockEventType.source,
      correlationId: correlationId, subject: Self.subject(hub: hub, sku: sku), sequence: version,
      payloadJSON: jsonBytes)
  }

  /// The payload's JSON text, byte for byte as `JSON.encoder()` writes it (tests compare): keys
  /// sorted, absent optionals left out.
  public var jsonBytes: [UInt8] {
    var out = JSONBytes(capacity: 256)
    out.beginObject()
    out.key("available")
    out.int(available)
    if let deposit {
      out.key("deposit")
      out.money(deposit)
    }
    out.key("hub")
    out.string(hub)
    out.key("name")
    out.string(name)
    out.key("price")
    out.money(price)
    if let reason {
      out.key("reason")
      out.string(reason)
    }
    out.key("sku")
    out.string(sku)
    if let unitPrice {
      out.key("unitPrice")
      out.beginObject()
      out.key("amount")
      out.money(unitPrice.amount)
      out.key("per")
      out.string(unitPrice.per.rawValue)
      out.endObject()
    }
    out.endObject()
    return out.bytes
  }
}

/// Payload of `hub.changed`: `{ hub, name, hours, pricing, currency }`. Subject `hub/<id>`,
/// sequence the hub's version.
public struct HubChanged: Codable, Hashable, Sendable {
  public var hub: HubID
  public var name: String
  public var hours: OpeningHours
  public var pricing: PricingSettings
  public var currency: String

  public init(hub: Hub) {
    self.hub = hub.id
    name = hub.name
    hours = hub.hours
    pricing = hub.pricing
    currency = hub.currency
  }

  /// The hub this payload describes.
  public var value: Hub { Hub(id: hub, name: name, hours: hours, pricing: pricing, currency: currency) }

  public static func subject(hub: HubID) -> String { EventSubject.hub(hub) }

  /// The event's message; `version` is the hub's version after the change.
  public func message(
    id: String, occurredAt: Date, correlationId: String?, version: Int64
  ) throws -> OutgoingMessage {
    try EventEnvelope.message(
      id: id, type: StockEventType.hubChanged, occurredAt: occurredAt, source: StockEventType.source,
      correlationId: correlationId, subject: Self.subject(hub: hub), sequence: version, payload: self)
  }
}

/// Payload of `catalogue.changed`: `{ hub, version }`, subject `catalogue/<hub>`, sequence the
/// hub's catalogue version. Only StockService's replicas read it.
public struct CatalogueChanged: Codable, Hashable, Sendable {
  public var hub: HubID
  public var version: Int64

  public init(hub: HubID, version: Int64) {
    self.hub = hub
    self.version = version
  }

  public static func subject(hub: HubID) -> String { EventSubject.catalogue(hub: hub) }

  public func message(id: String, occurredAt: Date, correlationId: String?) throws -> OutgoingMessage {
    try EventEnvelope.message(
      id: id, type: StockEventType.catalogueChanged, occurredAt: occurredAt, source: StockEventType.source,
      correlationId: correlationId, subject: Self.subject(hub: hub), sequence: version, payload: self)
  }
}

/// What StockService needs from `order.confirmed` / `order.declined` / `order.cancelled`:
/// the order id (the reservation's key) and, when given, its hub (the reservation knows its own
/// hub, so an outcome without one is still applied). Other fields of OrderService's payload are
/// ignored, so it may grow freely.
public struct OrderOutcome: Codable, Hashable, Sendable {
  /// The outcome, from the envelope's `type`.
  public enum Kind: String, Codable, Hashable, Sendable {
    case confirmed = "order.confirmed"
    case declined = "order.declined"
    case cancelled = "order.cancelled"
  }

  public var orderId: String
  public var hub: HubID?
  /// The customer who placed the order (CartService empties their cart at `hub`).
  public var userId: String?
  /// What was ordered (`order.confirmed` carries it): the customer's "buy again" and each
  /// product's popularity.
  public var lines: [Line]?

  /// One ordered product: the fields of `OrderLine` that StockService reads, as it reserved them.
  public typealias Line = ReservationLine

  public init(orderId: String, hub: HubID?, userId: String? = nil, lines: [Line]? = nil) {
    self.orderId = orderId
    self.hub = hub
    self.userId = userId
    self.lines = lines
  }

  private enum CodingKeys: String, CodingKey { case orderId, hub, userId, lines }

  public init(from decoder: any Decoder) throws {
    let container = try decoder.container(keyedBy: CodingKeys.self)
    orderId = try container.decode(String.self, forKey: .orderId)
    hub = try container.decodeIfPresent(HubID.self, forKey: .hub)
    userId = try container.decodeIfPresent(String.self, forKey: .userId)
    // As the hand reader: lines that cannot be read leave the outcome without them.
    lines = (try? container.decodeIfPresent([Line].self, forKey: .lines)) ?? nil
  }

}

// MARK: - Read by hand (every cart-service delivery of these decodes one)

extension StockChanged: JSONReadable {
  public init(reading reader: inout JSONReader) throws {
    var hub: HubID?
    var sku: SKU?
    var name: String?
    var available: Int?
    var price: Money?
    var deposit: Money?
    var unitPrice: UnitPrice?
    var reason: String?
    try reader.readObject { reader, key in
      switch key {
      case "hub": hub = try reader.readString()
      case "sku": sku = try reader.readString()
      case "name": name = try reader.readString()
      case "available": available = try reader.readInt()
      case "price": price = try Money(reading: &reader)
      case "deposit": deposit = reader.readNull() ? nil : try Money(reading: &reader)
      case "unitPrice": unitPrice = reader.readNull() ? nil : try UnitPrice(reading: &reader)
      case "reason": reason = reader.readNull() ? nil : try reader.readString()
      default: try reader.skipValue()
      }
    }
    guard let hub, let sku, let name, let available, let price else {
      throw JSONReader.Failure("stock.changed needs hub, sku, name, available and price")
    }
    self.init(
      hub: hub, sku: sku, name: name, available: available, price: price, deposit: deposit,
      unitPrice: unitPrice, reason: reason)
  }
}

extension UnitPrice: JSONReadable {
  public init(reading reader: inout JSONReader) throws {
    var amount: Money?
    var per: Unit?
    try reader.readObject { reader, key in
      switch key {
      case "amount": amount = try Money(reading: &reader)
      case "per": per = Unit(rawValue: try reader.readString())
      default: try reader.skipValue()
      }
    }
    guard let amount, let per else { throw JSONReader.Failure("unitPrice needs amount and a known per") }
    self.init(amount: amount, per: per)
  }
}

extension OrderOutcome: JSONReadable {
  public init(reading reader: inout JSONReader) throws {
    var orderId: String?
    var hub: HubID?
    var userId: String?
    var lines: [Line]?
    try reader.readObject { reader, key in
      switch key {
      case "orderId": orderId = try reader.readString()
      case "hub": hub = reader.readNull() ? nil : try reader.readString()
      case "userId": userId = reader.readNull() ? nil : try reader.readString()
      case "lines":
        if reader.readNull() { break }
        // Lines are a bonus (buy again): an outcome whose lines cannot be read is still applied.
        var read: [Line]? = []
        try reader.readArray { reader in
          var sku: SKU?
          var quantity: Int?
          try reader.readObject { reader, key in
            switch key {
            case "sku": sku = try? reader.readString()
            case "quantity": quantity = try? reader.readInt()
            default: try reader.skipValue()
            }
          }
          if let sku, let quantity { read?.append(Line(sku: sku, quantity: quantity)) } else { read = nil }
        }
        lines = read
      default: try reader.skipValue()
      }
    }
    guard let orderId else { throw JSONReader.Failure("an order outcome needs orderId") }
    self.init(orderId: orderId, hub: hub, userId: userId, lines: lines)
  }
}
