import Foundation
import GrocerAMQP
import GrocerContracts
import GrocerCore
import GrocerRuntime

/// What NotifyGateway consumes: `tracking.updated` (the newest per order waits for delivery),
/// `liveActivity.token`, and order outcomes (alerts on the customer's devices). Each once, by
/// message id; acked after the effect is committed; unreadable payloads are dead-lettered. Each
/// message maps to one use case of `NotifyCommands`.
struct NotifyEventHandler: Sendable {
  let commands: NotifyCommands
  let consumer: String
  let logger: Logger
  let coalesced: Counter
  /// Called after a commit that made something due.
  let wake: @Sendable () -> Void

  static let bindingKeys = [
    TrackingEventType.updated, TrackingEventType.liveActivityToken, OrderEventType.confirmed,
    OrderEventType.declined,
  ]

  /// The deliveries waiting at once, applied together (`writeEach`: one that fails is retried
  /// alone while the others commit).
  func handle(_ deliveries: [AMQPDelivery]) async -> [AMQPDisposition] {
    var dispositions = [AMQPDisposition](repeating: .ack, count: deliveries.count)
    var works: [(Int, String, @Sendable (NotifyCommands) throws -> Void)] = []
    for (index, delivery) in deliveries.enumerated() {
      switch prepare(delivery) {
      case .none: break
      case .reject: dispositions[index] = .reject
      case .work(let type, let work): works.append((index, type, work))
      }
    }
    guard !works.isEmpty else { return dispositions }
    let commands = self.commands
    let jobs = works.map { _, _, work in { @Sendable in try work(commands) } }
    let results: [(any Error)?]
    do {
      results = try await commands.store.database.writeEach(jobs)
    } catch {
      logger.error(
        "events failed; they will be tried again", ["error": "\(error)", "events": "\(works.count)"])
      for (index, _, _) in works { dispositions[index] = .failed(error) }
      return dispositions
    }
    for ((index, type, _), error) in zip(works, results) {
      guard let error else { continue }
      logger.error("event failed; it will be tried again", ["error": "\(error)", "event.type": type])
      dispositions[index] = .failed(error)
    }
    wake()
    return dispositions
  }

  private enum Prepared {
    /// Not ours: ack.
    case none
    /// Unreadable: dead-letter.
    case reject
    case work(String, @Sendable (NotifyCommands) throws -> Void)
  }

  private func prepare(_ delivery: AMQPDelivery) -> Prepared {
    let (consumer, coalesced) = (self.consumer, self.coalesced)
    // The routing key is the event's type: each body is read once, straight into its payload's type.
    let type = delivery.routingKey
    do {
      switch type {
      case TrackingEventType.updated:
        let event = try TypedEventEnvelope<TrackingUpdated>.decode(delivery.body, type: type)
        let (id, at, update, correlation) = (event.id, event.occurredAt, event.payload, event.correlationId)
        return .work(type) {
          let queued = try $0.queueUpdate(
            update, occurredAt: at, correlationID: correlation, messageID: id, consumer: consumer)
          if queued == .coalesced {
            coalesced.increment()
          }
        }
      case TrackingEventType.liveActivityToken:
        let event = try TypedEventEnvelope<LiveActivityToken>.decode(delivery.body, type: type)
        let (id, sequence, token) = (event.id, event.sequence, event.payload)
        return .work(type) {
          _ = try $0.recordActivityToken(token, sequence: sequence, messageID: id, consumer: consumer)
        }
      case OrderEventType.confirmed:
        let event = try TypedEventEnvelope<OrderConfirmed>.decode(delivery.body, type: type)
        let (id, at, order, correlation) = (event.id, event.occurredAt, event.payload, event.correlationId)
        return .work(type) {
          _ = try $0.orderConfirmed(
            order, occurredAt: at, correlationID: correlation, messageID: id, consumer: consumer)
        }
      case OrderEventType.declined:
        let event = try TypedEventEnvelope<OrderEnded>.decode(delivery.body, type: type)
        let (id, at, order, correlation) = (event.id, event.occurredAt, event.payload, event.correlationId)
        return .work(type) {
          _ = try $0.queueAlert(
            .paymentDeclined(order.message), user: order.userId, orderId: order.orderId, occurredAt: at,
            correlationID: correlation, messageID: id, consumer: consumer)
        }
      default:
        return .none
      }
    } catch {
      logger.warning(
        "unreadable event dead-lettered", ["error": "\(error)", "event.type": delivery.routingKey])
      return .reject
    }
  }
}
