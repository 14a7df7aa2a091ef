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
  /// pricing are keyed by order id, so asking twice is harmless. One that found no queue (its
  /// node died and the servers have not declared it again yet) was delivered to nobody: it is
  /// asked again every `unroutableRetry` until `timeout` has passed.
  private func ask<Reply: Decodable & JSONReadable>(
    _ queue: String, _ request: [UInt8], as type: Reply.Type
  ) async throws -> Reply {
    let deadline = ContinuousClock.now + timeout
    // Whether it was asked again already after the connection was down or broke, and whether an
    // earlier asking may have been received.
    var reconnected = false
    var maybeSent = false
    let reply: Data
    while true {
      do {
        reply = try await client.request(routingKey: queue, body: Data(request), timeout: timeout)
        break
      } catch AMQPError.unroutable {
        guard ContinuousClock.now + Self.unroutableRetry < deadline else {
          throw maybeSent ? RemoteCallError.noAnswer : RemoteCallError.notSent
        }
        try? await Task.sleep(for: Self.unroutableRetry)
      } catch AMQPError.notConnected where !reconnected {
        reconnected = true
        guard await client.waitUntilConnected(timeout: timeout) else { throw RemoteCallError.notSent }
      } catch AMQPError.connectionLost where !reconnected {
        reconnected = true
        maybeSent = true
        guard await client.waitUntilConnected(timeout: timeout) else { throw RemoteCallError.noAnswer }
      } catch AMQPError.notConnected, AMQPError.shuttingDown {
        throw maybeSent ? RemoteCallError.noAnswer : RemoteCallError.notSent
      } catch {
        throw RemoteCallError.noAnswer
      }
    }
    do { return try JSON.read(type, from: reply) } catch { throw RemoteCallError.noAnswer }
  }

  /// How long a question that found no queue waits before it is asked again.
  static let unroutableRetry: Duration = .milliseconds(250)
}
