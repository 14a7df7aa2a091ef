import Foundation
import GrocerAMQP
import GrocerContracts
import GrocerCore

/// What NotifyGateway consumes: `tracking.updated` (the newest per order waits for delivery),
/// `liveActivity.token`, and order outcomes (alerts on the customer's devices). Each once, by
/// message id; acked after the effect is committed; unreadable payloads are dead-lettered.
struct NotifyEventHandler: Sendable {
  let store: NotifyStore
  let consumer: String
  let logger: Logger
  let coalesced: Counter
  /// Called after a commit that made something due.
  let wake: @Sendable () -> Void

  static let bindingKeys = [
    TrackingEventType.updated, TrackingEventType.liveActivityToken, OrderEventType.confirmed,
    OrderEventType.declined,
  ]

  func handle(_ delivery: AMQPDelivery) async -> AMQPDisposition {
    let envelope: EventEnvelope
    let work: @Sendable (NotifyStore) throws -> Void
    let (consumer, coalesced) = (self.consumer, self.coalesced)
    do {
      envelope = try JSON.decode(EventEnvelope.self, from: delivery.body)
      let (id, at) = (envelope.id, envelope.occurredAt)
      switch envelope.type {
      case TrackingEventType.updated:
        let update = try envelope.payload(as: TrackingUpdated.self)
        work = {
          if try $0.enqueue(update, occurredAt: at, messageID: id, consumer: consumer) == .coalesced {
            coalesced.increment()
          }
        }
      case TrackingEventType.liveActivityToken:
        let token = try envelope.payload(as: LiveActivityToken.self)
        work = { _ = try $0.setActivityToken(token, messageID: id, consumer: consumer) }
      case OrderEventType.confirmed:
        let order = try envelope.payload(as: OrderConfirmed.self)
        work = {
          _ = try $0.queueAlert(
            AlertText(title: "Order confirmed", body: "We're packing your order."), user: order.userId,
            orderId: order.orderId, occurredAt: at, messageID: id, consumer: consumer)
        }
      case OrderEventType.declined:
        let order = try envelope.payload(as: OrderEnded.self)
        work = {
          _ = try $0.queueAlert(
            AlertText(title: "Payment declined", body: order.message ?? "Your payment did not go through."),
            user: order.userId, orderId: order.orderId, occurredAt: at, messageID: id, consumer: consumer)
        }
      default:
        return .ack
      }
    } catch {
      logger.warning(
        "unreadable event dead-lettered", ["error": "\(error)", "event.type": delivery.routingKey])
      return .reject
    }
    let store = self.store
    do {
      try await store.database.onWriterQueue { try work(store) }
      wake()
      return .ack
    } catch {
      logger.error(
        "event failed; it will be redelivered", ["error": "\(error)", "event.type": envelope.type])
      return .retry
    }
  }
}
