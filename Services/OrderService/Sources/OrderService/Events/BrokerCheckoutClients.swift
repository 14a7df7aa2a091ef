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
  ///
  /// A question is asked once more, after the client reconnected (within `timeout`), when its
  /// connection was down or broke while it waited (a cluster node died): reservations and
  /// pricing are keyed by order id, so asking twice is harmless.
  private func ask<Reply: Decodable & JSONReadable>(
    _ queue: String, _ request: [UInt8], as type: Reply.Type
  ) async throws -> Reply {
    var reply: Data?
    var maybeSent = false
    for attempt in 1...2 where reply == nil {
      do {
        reply = try await client.request(routingKey: queue, body: Data(request), timeout: timeout)
      } catch AMQPError.notConnected where attempt == 1 {
        guard await client.waitUntilConnected(timeout: timeout) else { throw RemoteCallError.notSent }
      } catch AMQPError.connectionLost where attempt == 1 {
        maybeSent = true
        guard await client.waitUntilConnected(timeout: timeout) else { throw RemoteCallError.noAnswer }
      } catch AMQPError.notConnected, AMQPError.shuttingDown {
        throw maybeSent ? RemoteCallError.noAnswer : RemoteCallError.notSent
      } catch {
        throw RemoteCallError.noAnswer
      }
    }
    guard let reply else { throw RemoteCallError.noAnswer }
    do { return try JSON.read(type, from: reply) } catch { throw RemoteCallError.noAnswer }
  }
}
