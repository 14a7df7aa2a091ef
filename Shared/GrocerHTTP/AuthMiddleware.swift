import GrocerCore
import GrocerRuntime

/// Reads `Authorization: Bearer <token>`, verifies it and sets `request.principal`.
///
/// On a route that requires auth, a missing or invalid token is a 401 with
/// `WWW-Authenticate: Bearer`, and a valid token with a role the route does not accept is a 403.
/// A public route (`.none`) never looks at the token. An `.optional` route sets the principal from a
/// valid token and ignores an invalid one: a public resource never fails because of a stale token.
public final class AuthMiddleware: HTTPMiddleware {
  private let verifier: any TokenVerifier
  private let logger: Logger

  public init(verifier: any TokenVerifier, logger: Logger = .discarding()) {
    self.verifier = verifier
    self.logger = logger
  }

  public func before(_ request: inout HTTPRequest) throws(HTTPError) {
    if request.authRequirement == .none { return }
    let token = Self.bearerToken(request.headers["Authorization"])
    if request.authRequirement == .optional {
      if let token, let principal = try? verifier.verify(token) { request.principal = principal }
      return
    }
    guard let token else {
      throw HTTPError.unauthorized(detail: "a bearer token is required")
    }
    let principal: Principal
    do {
      principal = try verifier.verify(token)
    } catch {
      logger.info("token refused", ["request.id": request.requestID, "auth.reason": "\(error)"])
      throw HTTPError.unauthorized(
        detail: error == .expired ? "the bearer token has expired" : "the bearer token is invalid")
    }
    request.principal = principal
    if case .roles(let roles) = request.authRequirement, !roles.contains(principal.role) {
      throw HTTPError.forbidden(detail: "this operation is not allowed for role \(principal.role.rawValue)")
    }
  }

  /// The token of a `Bearer` credential (scheme case-insensitive), or nil.
  static func bearerToken(_ header: String?) -> String? {
    guard let header else { return nil }
    // `<scheme> <token>`, spaces around either ignored; read without splitting (every request).
    let utf8 = header.utf8
    guard var start = utf8.firstIndex(where: { $0 != UInt8(ascii: " ") }) else { return nil }
    guard let schemeEnd = utf8[start...].firstIndex(of: UInt8(ascii: " ")) else { return nil }
    guard header[start..<schemeEnd].lowercased() == "bearer" else { return nil }
    guard let tokenStart = utf8[schemeEnd...].firstIndex(where: { $0 != UInt8(ascii: " ") }) else {
      return nil
    }
    start = tokenStart
    var end = utf8.endIndex
    if let space = utf8[start...].firstIndex(of: UInt8(ascii: " ")) {
      // Only trailing spaces may follow the token.
      guard utf8[space...].allSatisfy({ $0 == UInt8(ascii: " ") }) else { return nil }
      end = space
    }
    return String(header[start..<end])
  }
}
