import Foundation
import GrocerContracts
import GrocerCore

/// A rule of OrderService that a request broke, with its stable code; the HTTP layer maps the
/// kind to a status.
public struct OrderError: Error, Sendable, Hashable {
  public enum Kind: Sendable, Equatable {
    /// 400: the request itself is unusable (no key, a bad parameter).
    case malformed
    /// 422: well-formed but against a rule.
    case invalid
    /// 404: no such thing for this user.
    case notFound
    /// 409: the key's first request is still running.
    case inProgress
    /// 503: a dependency did not answer; nothing was charged, the same key may be sent again.
    case unavailable
    /// 401: a payment callback without a valid signature.
    case unauthenticated
  }

  public var kind: Kind
  public var code: String
  public var detail: String

  public init(_ kind: Kind, _ code: String, _ detail: String) {
    self.kind = kind
    self.code = code
    self.detail = detail
  }

  public static func unknownHub(_ hub: String) -> OrderError {
    OrderError(.notFound, "unknownHub", "there is no hub \(hub)")
  }

  public static func orderNotFound(_ id: String) -> OrderError {
    OrderError(.notFound, "orderNotFound", "there is no order \(id)")
  }

  public static let keyReused = OrderError(
    .invalid, "idempotencyKeyReused",
    "this Idempotency-Key was used with a different request body; use a new key for a new attempt")

  public static let inProgress = OrderError(
    .inProgress, "requestInProgress",
    "the first request with this Idempotency-Key is still running; ask again shortly")

  public static func unavailable(_ detail: String) -> OrderError {
    OrderError(.unavailable, "dependencyUnavailable", detail)
  }
}

extension OrderError {
  /// The refusal of a body that could not be read (400, with CartService's codes).
  public init(_ error: BodyError) {
    switch error {
    case .rule(let error as OrderError): self = error
    case .rule(let error): self.init(.invalid, "invalidBody", "\(error)")
    default:
      let problem = error.problem ?? ("invalidBody", "\(error)")
      self.init(.malformed, problem.code, problem.detail)
    }
  }
}
