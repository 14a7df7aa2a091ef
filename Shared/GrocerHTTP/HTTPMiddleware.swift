import GrocerCore

/// An interceptor around every request the router answers, from memory or by its handler.
///
/// `before` runs in registration order once the route is known (so it can read `request.route`
/// and `request.authRequirement`); throwing stops the chain and the error becomes the response.
/// `after` runs in reverse order on every response, including 404/405 and thrown errors.
///
/// Middleware are classes: the router runs each for every request on every transport thread,
/// and handing a class along costs at most one reference count, where a struct holding a few
/// references (a logger, a verifier) costs one for each, on counts shared by all threads.
public protocol HTTPMiddleware: AnyObject, Sendable {
  func before(_ request: inout HTTPRequest) throws(HTTPError)
  func after(_ request: HTTPRequest, _ response: inout HTTPResponse)
}

extension HTTPMiddleware {
  public func before(_ request: inout HTTPRequest) throws(HTTPError) {}
  public func after(_ request: HTTPRequest, _ response: inout HTTPResponse) {}
}

/// What a route demands of its caller.
public enum AuthRequirement: Sendable, Equatable {
  /// Public: no token needed, and none is looked at (no verification cost on hot paths).
  case none
  /// Public, but a valid token sets `principal` (so a handler may personalise); an invalid one
  /// is ignored, so a public resource never fails because of a stale token.
  case optional
  /// Any valid bearer token.
  case required
  /// A valid bearer token whose role is one of these (otherwise 403).
  case roles(Set<GrocerCore.Principal.Role>)
}
