import Foundation
import GrocerAMQP
import GrocerContracts
import GrocerCore
import GrocerRuntime

/// Applies order outcomes to reservations: `order.confirmed` commits, `order.declined` and
/// `order.cancelled` release. Acked only after the effect (and its inbox row) is committed.
struct OrderOutcomeHandler: Sendable {
  let commands: StockCommands
  let cache: StockCache
  let consumer: String
  let logger: Logger

  func handle(_ delivery: AMQPDelivery) async -> AMQPDisposition {
    // The routing key is the event's type; only order outcomes are read, in one decode.
    guard let kind = OrderOutcome.Kind(rawValue: delivery.routingKey) else { return .ack }
    let envelope: TypedEventEnvelope<OrderOutcome>
    do {
      envelope = try TypedEventEnvelope<OrderOutcome>.decode(delivery.body, type: delivery.routingKey)
    } catch {
      logger.warning(
        "undecodable order outcome dead-lettered", ["error": "\(error)", "event.type": delivery.routingKey])
      return .reject
    }
    let decoded = (kind: kind, outcome: envelope.payload)
    do {
      let (commands, consumer) = (self.commands, self.consumer)
      let (movements, effect) = try await runBlocking {
        try commands.applyOrderOutcome(
          decoded.kind, orderId: decoded.outcome.orderId, hub: decoded.outcome.hub, messageID: envelope.id,
          consumer: consumer, correlationID: envelope.correlationId,
          purchase: decoded.outcome.userId.flatMap { user in decoded.outcome.lines.map { (user, $0) } })
      }
      cache.apply(movements)
      switch effect {
      case .unknownOrder:
        logger.warning(
          "order outcome for an order without a reservation",
          ["order.id": decoded.outcome.orderId, "event.type": envelope.type])
      case .confirmedAfterExpiry:
        logger.warning(
          "order confirmed after its reservation expired; goods taken off on hand",
          ["order.id": decoded.outcome.orderId])
      case .applied, .nothingToDo:
        break
      }
      return .ack
    } catch {
      logger.error("order outcome failed", ["error": "\(error)", "order.id": decoded.outcome.orderId])
      return .failed(error)
    }
  }
}

/// Keeps this replica's cache and hub list current from `stock.changed` and `hub.changed`,
/// whichever replica (or this one) made the change.
struct CacheInvalidationHandler: Sendable {
  let cache: StockCache
  let catalogue: CatalogueMemory
  let hubs: HubDirectory
  let logger: Logger

  func handle(_ delivery: AMQPDelivery) async -> AMQPDisposition {
    // Only the head is read: every replica sees every stock event, so this runs often, and
    // the subject (`stock/<hub>/<sku>`) and sequence are all that invalidation needs.
    guard let head = try? JSON.read(Head.self, from: delivery.body) else {
      logger.warning("undecodable stock event dropped", ["event.type": delivery.routingKey])
      return .reject
    }
    switch head.type {
    case StockEventType.stockChanged:
      guard let (hub, sku) = EventSubject.stockParts(head.subject) else { break }
      hubs.insert(hub)
      cache.invalidate(hub: hub, sku: sku, sequence: head.sequence)
    case StockEventType.hubChanged:
      guard let hub = EventSubject.id(of: head.subject, kind: "hub") else { break }
      hubs.insert(hub)
      catalogue.invalidate(hub: hub)
    case StockEventType.catalogueChanged:
      guard let hub = EventSubject.id(of: head.subject, kind: "catalogue") else { break }
      catalogue.invalidate(hub: hub)
    default:
      break
    }
    return .ack
  }

  /// The part of the envelope invalidation reads: by hand (`JSONDecoder` was a twentieth of
  /// StockService's CPU under the order benchmark), falling back to `JSONDecoder` for what the
  /// reader refuses.
  struct Head: Decodable, JSONReadable {
    var type: String
    var subject: String
    var sequence: Int64

    init(reading reader: inout JSONReader) throws {
      var type: String?
      var subject: String?
      var sequence: Int64?
      try reader.readObject { reader, key in
        switch key {
        case "type": type = try reader.readString()
        case "subject": subject = try reader.readString()
        case "sequence": sequence = try reader.readInt64()
        default: try reader.skipValue()
        }
      }
      guard let type, let subject, let sequence else {
        throw JSONReader.Failure("an event envelope needs type, subject and sequence")
      }
      (self.type, self.subject, self.sequence) = (type, subject, sequence)
    }
  }
}

/// Answers reservation requests over request/reply: all-or-nothing, idempotent per order id.
struct ReservationResponder: Sendable {
  let commands: StockCommands
  let cache: StockCache
  let logger: Logger

  func handle(_ delivery: AMQPDelivery) async -> Data {
    let reply: ReservationReply
    do {
      let request = try JSON.read(ReservationRequest.self, from: delivery.body)
      do {
        let commands = self.commands
        let correlationID = request.correlationId ?? delivery.correlationID
        // On the writer queue: reservations handled at once commit together (group commit).
        let (answer, movements) = try await commands.store.database.onWriterQueue {
          try commands.reserve(request, correlationID: correlationID)
        }
        cache.apply(movements)
        reply = answer
      } catch {
        logger.error("reservation failed", ["error": "\(error)", "order.id": request.orderId])
        reply = ReservationReply(
          orderId: request.orderId, status: .rejected,
          error: .init(code: "unavailable", detail: "the reservation could not be stored; ask again"))
      }
    } catch let error as DomainError {
      reply = .rejected(orderId: "", error)
    } catch {
      reply = .rejected(orderId: "", .malformedJSON("\(error)"))
    }
    return Data(reply.jsonBytes)
  }
}

extension StockCache {
  /// Drops the entries that a local write moved (the event does the same on other replicas).
  func apply(_ movements: [StockMovement]) {
    for movement in movements { invalidate(hub: movement.hub, sku: movement.sku, sequence: movement.version) }
  }
}
