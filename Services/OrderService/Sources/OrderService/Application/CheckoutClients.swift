import Foundation
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
