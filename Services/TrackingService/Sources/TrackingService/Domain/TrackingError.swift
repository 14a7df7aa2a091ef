import Foundation
import GrocerContracts
import GrocerCore

/// What TrackingService refuses, with a stable code; the HTTP layer maps the kind to a status.
public struct TrackingError: Error, Sendable, Hashable {
  public enum Kind: Sendable, Hashable {
    /// 400
    case malformed
    /// 422
    case invalid
    /// 404 (also for someone else's order)
    case notFound
    /// 403
    case forbidden
    /// 409
    case conflict
  }

  public var kind: Kind
  public var code: String
  public var detail: String

  public init(_ kind: Kind, _ code: String, _ detail: String) {
    self.kind = kind
    self.code = code
    self.detail = detail
  }

  public static func notFound(_ orderId: String) -> TrackingError {
    TrackingError(.notFound, "orderNotFound", "there is no order \(orderId)")
  }

  public static func illegal(_ transition: IllegalTransition) -> TrackingError {
    TrackingError(
      .conflict, "illegalTransition",
      "\(transition.from.rawValue) → \(transition.to.rawValue) is not allowed: \(transition.reason)")
  }
}

extension TrackingError {
  /// The refusal of a body that could not be read (400).
  public init(_ error: BodyError) {
    switch error {
    case .rule(let error as TrackingError): self = error
    case .rule(let error): self.init(.invalid, "invalidBody", "\(error)")
    default:
      let problem = error.problem ?? ("invalidBody", "\(error)")
      self.init(.malformed, problem.code, problem.detail)
    }
  }
}
