import Foundation
import GrocerAMQP
import GrocerContracts
import GrocerCore

/// `CheckoutClients` over one direct reply-to client.
public struct BrokerCheckoutClients: CheckoutClients {
  let client: any AMQPRequester
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
