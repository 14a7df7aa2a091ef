import Foundation
import GrocerAMQP
import GrocerContracts
import GrocerCore
import GrocerRuntime

/// Applies what CartService consumes: `stock.changed` and `hub.changed` to the catalogue copy
/// and the carts holding what moved, `order.confirmed` to the customer's cart. Acked only after
/// the effect is committed (with its inbox row for `order.confirmed`; the copies are guarded by
/// their versions instead); a payload that cannot be read is dead-lettered.
struct CartEventHandler: Sendable {
  let commands: CartCommands
  let consumer: String
  let logger: Logger

  static let bindingKeys = [
    StockEventType.stockChanged, StockEventType.hubChanged, StockEventType.orderConfirmed,
  ]

  /// The deliveries waiting at once, applied together (`writeEach`: one that fails is retried
  /// alone while the others commit).
  func handle(_ deliveries: [AMQPDelivery]) async -> [AMQPDisposition] {
    var dispositions = [AMQPDisposition](repeating: .ack, count: deliveries.count)
    var works: [(index: Int, type: String, work: @Sendable () throws -> Void)] = []
    for (index, delivery) in deliveries.enumerated() {
      switch prepare(delivery) {
      case .none: break
      case .reject: dispositions[index] = .reject
      case .work(let type, let work): works.append((index, type, work))
      }
    }
    guard !works.isEmpty else { return dispositions }
    let jobs = works.map(\.work)
    let results: [(any Error)?]
    do {
      results = try await commands.store.database.writeEach(jobs)
    } catch {
      logger.error(
        "events failed; they will be tried again", ["error": "\(error)", "events": "\(works.count)"])
      for work in works { dispositions[work.index] = .failed(error) }
      return dispositions
    }
    for (work, error) in zip(works, results) {
      guard let error else { continue }
      logger.error("event failed; it will be tried again", ["error": "\(error)", "event.type": work.type])
      dispositions[work.index] = .failed(error)
    }
    return dispositions
  }

  private enum Prepared {
    /// Not for this service (or nothing to do): ack.
    case none
    /// Unreadable: dead-letter.
    case reject
    case work(String, @Sendable () throws -> Void)
  }

  /// What to do with one delivery: ack it as is, dead-letter it, or apply `work` (a use case).
  private func prepare(_ delivery: AMQPDelivery) -> Prepared {
    let (commands, consumer, logger) = (self.commands, self.consumer, self.logger)
    // The routing key is the event's type: each body is read once, straight into its payload's
    // type (no JSONValue tree decoded twice).
    let type = delivery.routingKey
    let work: @Sendable () throws -> Void
    do {
      switch type {
      case StockEventType.stockChanged:
        let envelope = try TypedEventEnvelope<StockChanged>.decode(delivery.body, type: type)
        let event = envelope.payload
        work = {
          let carts = try commands.applyStockChanged(
            event, version: envelope.sequence, correlationID: envelope.correlationId)
          if carts > 0 {
            logger.info("carts adjusted", ["hub": event.hub, "sku": event.sku, "carts": "\(carts)"])
          }
        }
      case StockEventType.hubChanged:
        let envelope = try TypedEventEnvelope<HubChanged>.decode(delivery.body, type: type)
        work = {
          _ = try commands.applyHubChanged(
            envelope.payload, version: envelope.sequence, correlationID: envelope.correlationId)
        }
      case StockEventType.orderConfirmed:
        let envelope = try TypedEventEnvelope<OrderOutcome>.decode(delivery.body, type: type)
        let outcome = envelope.payload
        guard let user = outcome.userId, let hub = outcome.hub else {
          logger.warning(
            "order.confirmed without userId or hub; no cart to empty", ["order.id": outcome.orderId])
          return .none
        }
        work = {
          _ = try commands.applyOrderConfirmed(
            user: user, hub: hub, messageID: envelope.id, consumer: consumer,
            correlationID: envelope.correlationId)
        }
      default:
        return .none
      }
    } catch {
      logger.warning("unreadable event dead-lettered", ["error": "\(error)", "event.type": type])
      return .reject
    }
    return .work(type, work)
  }
}

/// Answers OrderService's checkout questions over request/reply (`CartCheckoutRequest`).
struct CheckoutResponder: Sendable {
  let commands: CartCommands
  let logger: Logger

  func handle(_ delivery: AMQPDelivery) async -> Data {
    let reply: CartCheckoutReply
    do {
      let request = try JSON.read(CartCheckoutRequest.self, from: delivery.body)
      reply = await answer(request, correlationID: request.correlationId ?? delivery.correlationID)
    } catch {
      reply = CartCheckoutReply(
        cart: nil, matches: false,
        error: RemoteError(code: "badRequest", detail: "unreadable request: \(error)"))
    }
    return Data(reply.jsonBytes())
  }

  private func answer(_ request: CartCheckoutRequest, correlationID: String?) async -> CartCheckoutReply {
    guard Identifier.isValid(request.hub), !request.userId.isEmpty else {
      return CartCheckoutReply(
        cart: nil, matches: false,
        error: RemoteError(code: "badRequest", detail: "`hub` and `userId` are required"))
    }
    let commands = self.commands
    do {
      switch request.kind {
      case .price:
        // On the writer queue: checkouts handled at once commit together with the events.
        let (cart, matches) = try await commands.store.database.onWriterQueue {
          try commands.checkout(user: request.userId, hub: request.hub, version: request.cartVersion)
        }
        return CartCheckoutReply(cart: cart, matches: matches)
      case .applyCounts:
        let counts = request.counts ?? []
        let cart = try await commands.store.database.onWriterQueue {
          try commands.applyCounts(
            user: request.userId, hub: request.hub, counts: counts, correlationID: correlationID)
        }
        return CartCheckoutReply(cart: cart, matches: request.cartVersion == cart.version)
      }
    } catch let error as CartError {
      return CartCheckoutReply(
        cart: nil, matches: false, error: RemoteError(code: error.code, detail: error.detail))
    } catch {
      logger.error("checkout question failed", ["error": "\(error)", "hub": request.hub])
      return CartCheckoutReply(
        cart: nil, matches: false,
        error: RemoteError(code: "unavailable", detail: "the cart could not be read; ask again"))
    }
  }
}
