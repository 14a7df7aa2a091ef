import Foundation
import GrocerCore

/// Event types OrderService publishes (= routing keys on `grocer.events`), with the subject
/// `order/<id>` and sequence 1 (an order ends once).
public enum OrderEventType {
  public static let confirmed = StockEventType.orderConfirmed
  public static let declined = StockEventType.orderDeclined
  public static let cancelled = StockEventType.orderCancelled
  public static let source = "order-service"
}

/// A point on the map: `{ "lat": 52.53, "lng": 13.41 }` (degrees, WGS 84).
public struct GeoPoint: Codable, Hashable, Sendable {
  public var lat: Double
  public var lng: Double

  public init(lat: Double, lng: Double) {
    self.lat = lat
    self.lng = lng
  }

  /// Latitude in −90…90 and longitude in −180…180, both finite.
  public var isValid: Bool {
    lat.isFinite && lng.isFinite && (-90...90).contains(lat) && (-180...180).contains(lng)
  }
}

/// One line of a placed order, as priced at checkout.
public struct OrderLine: Codable, Hashable, Sendable {
  public var sku: SKU
  public var name: String
  public var quantity: Int
  public var unitPrice: Money
  public var deposit: Money?
  public var lineTotal: Money

  public init(sku: SKU, name: String, quantity: Int, unitPrice: Money, deposit: Money?, lineTotal: Money) {
    self.sku = sku
    self.name = name
    self.quantity = quantity
    self.unitPrice = unitPrice
    self.deposit = deposit
    self.lineTotal = lineTotal
  }

  public init(_ line: CartLineView) {
    self.init(
      sku: line.sku, name: line.name, quantity: line.quantity, unitPrice: line.unitPrice,
      deposit: line.deposit,
      lineTotal: line.lineTotal)
  }
}

/// Payload of `order.confirmed`: everything a consumer needs without asking OrderService —
/// StockService commits the reservation (`orderId`), CartService empties `userId`'s cart at `hub`
/// (from `cartVersion` on), TrackingService starts tracking towards `deliverTo`.
///
/// Envelope subject is the order id, sequence 1 (an order is confirmed once).
public struct OrderConfirmed: Codable, Hashable, Sendable {
  public var orderId: String
  public var userId: String
  public var hub: HubID
  public var cartVersion: Int64
  public var lines: [OrderLine]
  public var totals: CartTotals
  public var deliverTo: GeoPoint?
  public var paymentId: String
  public var placedAt: Date

  public init(
    orderId: String, userId: String, hub: HubID, cartVersion: Int64, lines: [OrderLine], totals: CartTotals,
    deliverTo: GeoPoint?, paymentId: String, placedAt: Date
  ) {
    self.orderId = orderId
    self.userId = userId
    self.hub = hub
    self.cartVersion = cartVersion
    self.lines = lines
    self.totals = totals
    self.deliverTo = deliverTo
    self.paymentId = paymentId
    self.placedAt = placedAt
  }
}

extension OrderConfirmed {
  /// The payload's JSON written by hand (one per confirmed order): the bytes `JSON.encode(self)`
  /// writes, keys sorted and absent optionals left out (tests compare).
  public var jsonBytes: [UInt8] {
    var out = JSONBytes(capacity: 384 + lines.count * 160)
    out.beginObject()
    out.key("cartVersion")
    out.int(cartVersion)
    if let deliverTo {
      out.key("deliverTo")
      deliverTo.write(into: &out)
    }
    out.key("hub")
    out.string(hub)
    out.key("lines")
    out.beginArray()
    for line in lines {
      out.pricedLine(
        sku: line.sku, name: line.name, quantity: line.quantity, unitPrice: line.unitPrice,
        deposit: line.deposit, lineTotal: line.lineTotal, absentDeposit: .omitted)
    }
    out.endArray()
    out.key("orderId")
    out.string(orderId)
    out.key("paymentId")
    out.string(paymentId)
    out.key("placedAt")
    out.date(placedAt)
    out.key("totals")
    totals.write(into: &out)
    out.key("userId")
    out.string(userId)
    out.endObject()
    return out.bytes
  }
}

/// Payload of `order.declined` (the payment failed) and `order.cancelled` (the checkout gave up
/// after a reservation may have been made): StockService releases the reservation.
/// `reason` is a stable code (`paymentDeclined`, `actionExpired`, `reservationUnknown`, …).
public struct OrderEnded: Codable, Hashable, Sendable {
  public var orderId: String
  public var userId: String
  public var hub: HubID
  public var reason: String
  public var message: String?

  public init(orderId: String, userId: String, hub: HubID, reason: String, message: String?) {
    self.orderId = orderId
    self.userId = userId
    self.hub = hub
    self.reason = reason
    self.message = message
  }
}
