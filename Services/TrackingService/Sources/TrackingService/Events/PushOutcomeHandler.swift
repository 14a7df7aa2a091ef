import Foundation
import GrocerAMQP
import GrocerContracts
import GrocerCore
import GrocerRuntime

/// `push.delivered` / `push.failed` from NotifyGateway: what the order's Live Activity shows
/// moves on (`LiveActivityDelivery`). Alerts to devices are acked and ignored; an unreadable
/// payload is dead-lettered.
struct PushOutcomeHandler: Sendable {
  let commands: TrackingCommands
  let consumer: String
  let logger: Logger

  static let bindingKeys = [PushEventType.delivered, PushEventType.failed]

  func handle(_ delivery: AMQPDelivery) async -> AMQPDisposition {
    let envelope: EventEnvelope
    let outcome: PushOutcome
    do {
      envelope = try JSON.decode(EventEnvelope.self, from: delivery.body)
      guard Self.bindingKeys.contains(envelope.type) else { return .ack }
      outcome = try envelope.payload(as: PushOutcome.self)
    } catch {
      logger.warning(
        "unreadable push outcome dead-lettered", ["error": "\(error)", "event.type": delivery.routingKey])
      return .reject
    }
    guard outcome.tokenKind == .liveActivity else { return .ack }
    let (commands, consumer) = (self.commands, self.consumer)
    do {
      _ = try await commands.store.database.onWriterQueue {
        try commands.recordPushOutcome(outcome, messageID: envelope.id, consumer: consumer)
      }
      return .ack
    } catch {
      logger.error(
        "a push outcome failed; it will be tried again", ["error": "\(error)", "order.id": outcome.orderId])
      return .failed(error)
    }
  }
}

/// TrackingService's one queue: each event to the handler of its type.
struct TrackingEventHandler: Sendable {
  let orders: OrderConfirmedHandler
  let pushes: PushOutcomeHandler

  let notices: NoticeHandler

  static let bindingKeys = [
    StockEventType.orderConfirmed, PushEventType.delivered, PushEventType.failed, NoticeEventType.posted,
  ]

  func handle(_ delivery: AMQPDelivery) async -> AMQPDisposition {
    if PushOutcomeHandler.bindingKeys.contains(delivery.routingKey) { return await pushes.handle(delivery) }
    if delivery.routingKey == NoticeEventType.posted { return await notices.handle(delivery) }
    return await orders.handle(delivery)
  }
}

/// `hub.notice` from NotifyGateway: the hub's notice for the snapshots of its running orders.
struct NoticeHandler: Sendable {
  let commands: TrackingCommands
  let consumer: String
  let logger: Logger

  func handle(_ delivery: AMQPDelivery) async -> AMQPDisposition {
    let event: TypedEventEnvelope<HubNotice>
    do { event = try TypedEventEnvelope<HubNotice>.decode(delivery.body, type: NoticeEventType.posted) } catch
    {
      logger.warning("unreadable hub.notice dead-lettered", ["error": "\(error)"])
      return .reject
    }
    let (commands, consumer) = (self.commands, self.consumer)
    do {
      _ = try await commands.store.database.onWriterQueue {
        try commands.recordNotice(
          event.payload, sequence: event.sequence, messageID: event.id, consumer: consumer)
      }
      return .ack
    } catch {
      logger.error(
        "hub.notice failed; it will be tried again", ["error": "\(error)", "hub": event.payload.hub])
      return .failed(error)
    }
  }
}

/// Another replica's `tracking.updated`, for this replica's open streams of that order: each
/// version as the event carries it (so none is skipped), with what the lock screen shows read
/// here, when someone is listening.
struct StreamFeedHandler: Sendable {
  let commands: TrackingCommands
  let clock: any WallClock
  let logger: Logger

  func handle(_ delivery: AMQPDelivery) async -> AMQPDisposition {
    guard
      let event = try? TypedEventEnvelope<TrackingUpdated>.decode(
        delivery.body, type: TrackingEventType.updated)
    else { return .ack }
    var reply = event.payload.snapshot
    let orderId = reply.orderId
    guard commands.streams.hasSubscribers(orderId) else { return .ack }
    let commands = self.commands
    do {
      let record = try await runBlocking { try commands.store.record(orderId) }
      reply.liveActivity = record?.liveActivity.view(
        hasToken: record?.liveActivityToken != nil, at: clock.now())
    } catch {
      logger.warning(
        "a stream's lock-screen state could not be read", ["error": "\(error)", "order.id": orderId])
    }
    commands.streams.publish(reply)
    return .ack
  }
}
