import Foundation
import GrocerAMQP
import GrocerContracts
import GrocerCore

/// Why a question to another service got no answer.
public enum RemoteCallError: Error, Sendable, Equatable {
  /// It was never sent (no broker connection): nothing can have happened.
  case notSent
  /// Sent, but no answer came in time: it may or may not have taken effect.
  case noAnswer
}

/// The questions the checkout asks other services over the broker (request/reply).
public protocol CheckoutClients: Sendable {
  func askCart(_ request: CartCheckoutRequest) async throws -> CartCheckoutReply
  func reserve(_ request: ReservationRequest) async throws -> ReservationReply
}

/// `CheckoutClients` over one direct reply-to client.
public struct BrokerCheckoutClients: CheckoutClients {
  let client: AMQPRPCClient
  let cartQueue: String
  let reservationQueue: String
  let timeout: Duration

  public func askCart(_ request: CartCheckoutRequest) async throws -> CartCheckoutReply {
    try await ask(cartQueue, request.jsonBytes, as: CartCheckoutReply.self)
  }

  public func reserve(_ request: ReservationRequest) async throws -> ReservationReply {
    try await ask(reservationQueue, request.jsonBytes, as: ReservationReply.self)
  }

  /// `request`: the request's JSON (each request type writes its own, by hand).
  private func ask<Reply: Decodable & JSONReadable>(
    _ queue: String, _ request: [UInt8], as type: Reply.Type
  ) async throws -> Reply {
    let reply: Data
    do {
      reply = try await client.request(routingKey: queue, body: Data(request), timeout: timeout)
    } catch AMQPError.notConnected {
      throw RemoteCallError.notSent
    } catch AMQPError.shuttingDown {
      throw RemoteCallError.notSent
    } catch {
      throw RemoteCallError.noAnswer
    }
    do { return try JSON.read(type, from: reply) } catch { throw RemoteCallError.noAnswer }
  }
}
