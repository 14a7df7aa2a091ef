import Foundation
import GrocerCore
import GrocerRuntime

/// What the bank must do before a payment can go on: `{ "type": "threeDSecure", "url" }`.
public struct PaymentAction: Codable, Hashable, Sendable {
  public var type: String
  public var url: String

  public init(type: String = "threeDSecure", url: String) {
    self.type = type
    self.url = url
  }
}

/// Where a payment stands at the provider.
public enum PaymentState: Hashable, Sendable {
  /// Money taken.
  case approved(paymentId: String)
  /// Refused (or cancelled before it was taken): nothing taken.
  case declined(paymentId: String, message: String)
  /// Waiting for the customer's bank (3-D Secure); the verdict arrives by callback.
  case requiresAction(paymentId: String, action: PaymentAction)
  /// Received, no verdict yet: ask again later.
  case processing(paymentId: String)

  public var paymentId: String {
    switch self {
    case .approved(let id), .declined(let id, _), .requiresAction(let id, _), .processing(let id): id
    }
  }
}

/// One charge: `idempotencyKey` makes asking twice charge once.
public struct ChargeRequest: Hashable, Sendable {
  public var idempotencyKey: String
  public var amount: Money
  public var method: PaymentMethod
  public var token: String
  public var reference: String

  public init(idempotencyKey: String, amount: Money, method: PaymentMethod, token: String, reference: String)
  {
    self.idempotencyKey = idempotencyKey
    self.amount = amount
    self.method = method
    self.token = token
    self.reference = reference
  }
}

/// A verified callback from the provider: the bank's verdict on a payment that required action.
public struct PaymentEvent: Hashable, Sendable {
  public enum Kind: String, Sendable { case succeeded = "payment.succeeded", failed = "payment.failed" }
  public var paymentId: String
  public var kind: Kind
  public var message: String?

  public init(paymentId: String, kind: Kind, message: String? = nil) {
    self.paymentId = paymentId
    self.kind = kind
    self.message = message
  }
}

/// Why a provider call gave no answer (the outcome is unknown, never "failed").
public enum PaymentProviderError: Error, Sendable, Equatable {
  case timeout
  case unavailable(String)
}

/// The payment provider, behind a protocol so the simulator and a real provider are
/// interchangeable. Every call may be repeated: `charge` is idempotent on its key.
public protocol PaymentProvider: Sendable {
  /// Charges once per `request.idempotencyKey`; asking again answers the same payment.
  func charge(_ request: ChargeRequest) async throws -> PaymentState
  /// The payment made under `idempotencyKey`, or nil if the provider never received it.
  func lookup(idempotencyKey: String) async throws -> PaymentState?
  /// Stops a payment that has no verdict yet (declined "cancelled"); one that has one is
  /// answered as it is. Nil if the provider never received it.
  func cancel(idempotencyKey: String) async throws -> PaymentState?
  /// The provider's state of the payment a verified callback names (the callback's verdict, for
  /// the simulator; a real provider is asked). Nil for a payment it does not know.
  func settle(_ event: PaymentEvent) async throws -> PaymentState?
}

extension PaymentProvider {
  /// `operation` with a time limit: past it the caller stops waiting, even if the operation does
  /// not stop on cancellation (a blocking client, a stuck connection); it is cancelled and left
  /// to finish on its own. The provider may still act, which is why every call is idempotent and
  /// looked up afterwards. The limit is an entry of `deadlines`.
  func within<T: Sendable>(
    _ limit: Duration, on deadlines: Deadlines, _ operation: @escaping @Sendable () async throws -> T
  ) async throws -> T {
    let result = await answer(within: limit, on: deadlines, cancellingLate: true) {
      () async -> Result<T, any Error> in
      do { return .success(try await operation()) } catch { return .failure(error) }
    }
    guard let result else { throw PaymentProviderError.timeout }
    return try result.get()
  }
}
