import Foundation
import GrocerContracts
import GrocerCore

/// The events an order's end publishes, built from the order as the checkout holds it. Each
/// has the subject `order/<id>`, with sequence 1: an order ends once.
public enum OrderEvents {
  /// `order.confirmed`: CartService empties the cart, StockService commits the reservation,
  /// TrackingService starts tracking.
  public static func confirmed(
    _ order: OrderRecord, cart: CartView, paymentId: String, id: String, at now: Date
  )
    -> OutgoingMessage
  {
    let payload = OrderConfirmed(
      orderId: order.orderId, userId: order.userId, hub: order.hub, cartVersion: cart.version,
      lines: cart.lines.map(OrderLine.init), totals: cart.totals, deliverTo: order.deliverTo,
      paymentId: paymentId, placedAt: now)
    // Written in one pass by hand (no JSONValue round trip, no JSONEncoder): one per order.
    return EventEnvelope.message(
      id: id, type: OrderEventType.confirmed, occurredAt: now, source: OrderEventType.source,
      correlationId: order.correlationID, subject: EventSubject.order(order.orderId), sequence: 1,
      payloadJSON: payload.jsonBytes)
  }

  /// `order.declined` or `order.cancelled`: StockService releases the reservation.
  public static func ended(
    _ order: OrderRecord, type: String, reason: String, message: String?, id: String, at now: Date
  ) throws -> OutgoingMessage {
    let payload = OrderEnded(
      orderId: order.orderId, userId: order.userId, hub: order.hub, reason: reason, message: message)
    return try EventEnvelope.message(
      id: id, type: type, occurredAt: now, source: OrderEventType.source, correlationId: order.correlationID,
      subject: EventSubject.order(order.orderId), sequence: 1, payload: payload)
  }
}
