/// The one seam between transport and logic: the adapter (and `TestClient`) call only this.
///
/// `respond(to:)` answers every request. `respondImmediately` is an optional shortcut the
/// adapter tries first, on its own thread: the answer when it needs no I/O (a route registered
/// with `Route.answeringFromMemory`), or nil (the default) to suspend the connection and await
/// `respond`. It takes the request `inout` so that path never copies it; when it returns nil it
/// may have filled in what it resolved (route, parameters, request id), and `respond` resolves
/// again.
public protocol HTTPResponder: Sendable {
  func respond(to request: HTTPRequest) async -> HTTPResponse
  func respondImmediately(to request: inout HTTPRequest) -> HTTPResponse?
  /// `respond(to:)` for the adapter, which resumes a suspended connection from `completion`
  /// (called exactly once, from any thread). By default a task awaits `respond(to:)`; a route
  /// registered with `Route.answeredByCallback` is answered without one.
  func respond(to request: HTTPRequest, completion: @escaping @Sendable (HTTPResponse) -> Void)
}

extension HTTPResponder {
  /// By default every request goes async.
  public func respondImmediately(to request: inout HTTPRequest) -> HTTPResponse? { nil }

  public func respond(to request: HTTPRequest, completion: @escaping @Sendable (HTTPResponse) -> Void) {
    Task { completion(await respond(to: request)) }
  }

  /// `respondImmediately` on a copy of `request` (tests, callers that keep theirs).
  public func respondImmediately(to request: HTTPRequest) -> HTTPResponse? {
    var copy = request
    return respondImmediately(to: &copy)
  }
}

/// The request body limit, shared by the adapter and `TestClient` so both answer 413 alike.
public enum BodyLimit {
  /// 64 KiB, what SPEC.md allows.
  public static let defaultBytes = 64 * 1024

  /// A 413 problem when the declared `Content-Length` or the bytes received so far exceed
  /// `limit`; nil when within it.
  public static func check(declaredLength: String?, received: Int, limit: Int) -> HTTPResponse? {
    if received > limit { return HTTPError.payloadTooLarge(limit: limit).response }
    if let declaredLength, let length = UInt64(declaredLength), length > UInt64(limit) {
      return HTTPError.payloadTooLarge(limit: limit).response
    }
    return nil
  }
}
