import Foundation
import GrocerAMQP
import GrocerContracts
import GrocerCore
import GrocerRuntime

/// `order.confirmed` creates the order's tracking (once: the inbox and the order id both guard
/// it). Acked only after the snapshot and its `tracking.updated` are committed; a payload that
/// cannot be read is dead-lettered; an event of another type is ignored.
struct OrderConfirmedHandler: Sendable {
  let commands: TrackingCommands
  let consumer: String
  let logger: Logger

  static let bindingKeys = [StockEventType.orderConfirmed]

  func handle(_ delivery: AMQPDelivery) async -> AMQPDisposition {
    // The routing key is the event's type: another type (put straight into the queue, say) is
    // not ours to read, so it is acked and ignored, as every service does.
    guard delivery.routingKey == StockEventType.orderConfirmed else { return .ack }
    let envelope: EventEnvelope
    let order: OrderConfirmed
    do {
      envelope = try JSON.decode(EventEnvelope.self, from: delivery.body)
      guard envelope.type == StockEventType.orderConfirmed else { return .ack }
      order = try envelope.payload(as: OrderConfirmed.self)
    } catch {
      logger.warning(
        "unreadable order.confirmed dead-lettered", ["error": "\(error)", "event.type": delivery.routingKey])
      return .reject
    }
    let (commands, consumer) = (self.commands, self.consumer)
    do {
      let created = try await commands.store.database.onWriterQueue {
        try commands.startTracking(
          order, messageID: envelope.id, consumer: consumer, correlationID: envelope.correlationId)
      }
      if created { logger.info("tracking started", ["order.id": order.orderId, "hub": order.hub]) }
      return .ack
    } catch {
      logger.error(
        "order.confirmed failed; it will be tried again", ["error": "\(error)", "order.id": order.orderId])
      return .failed(error)
    }
  }
}
