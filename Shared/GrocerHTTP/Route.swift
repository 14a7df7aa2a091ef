/// One endpoint: a method, a path template, what it demands of the caller and its handler.
///
/// Controllers list the routes they serve as `[Route]` and the composition root adds them to a
/// `Router`. Every handler is `async`; the transport suspends the connection while it runs.
public struct Route: Sendable {
  /// Answers a request; a thrown `HTTPError` becomes its problem+json, anything else a 500.
  public typealias Handler = @Sendable (HTTPRequest) async throws -> HTTPResponse
  /// An answer from memory on the transport's own thread, or nil to leave the request to the
  /// route's handler (see `answeringFromMemory(_:)`).
  public typealias MemoryAnswer = @Sendable (inout HTTPRequest) throws -> HTTPResponse?
  /// Work handed to a queue of its own that calls `done` exactly once, from any thread (see
  /// `answeredByCallback`).
  public typealias CallbackAnswer =
    @Sendable (HTTPRequest, _ done: @escaping @Sendable (Result<HTTPResponse, any Error>) -> Void) -> Void

  public var method: String
  /// `/v1/hubs/{hub}/products/{sku}`: literal segments and `{name}` parameters.
  public var template: String
  public var auth: AuthRequirement
  public var handler: Handler
  /// Set only by `answeringFromMemory(_:)`; read by the router's immediate path.
  var memoryAnswer: MemoryAnswer?
  /// Set only by `answeredByCallback`; read by the router's callback path.
  var callbackAnswer: CallbackAnswer?

  public init(
    _ method: String, _ template: String, auth: AuthRequirement = .none, _ handler: @escaping Handler
  ) {
    self.method = method.uppercased()
    self.template = template
    self.auth = auth
    self.handler = handler
  }

  /// This route, also answered inside the transport's callback when `answer` returns non-nil:
  /// no connection suspended, no task. Only for a route whose benchmark shows the hop matters
  /// (the stock lookup); `handler` still answers every request `answer` leaves (nil), so it must
  /// answer a hit as well.
  ///
  /// The middleware runs around `answer` as around the handler; after a nil its `before` hooks
  /// run again for the handler, so they must have no side effects.
  public func answeringFromMemory(_ answer: @escaping MemoryAnswer) -> Route {
    var route = self
    route.memoryAnswer = answer
    return route
  }

  /// A route whose work runs on a queue of its own (a database writer, then a saga) and calls
  /// back: the adapter suspends the connection and resumes it from that callback, with no task
  /// and no continuation in between. Only for a write whose benchmark shows those hops matter
  /// (`POST /v1/orders`, Benchmarks/order). The route's handler awaits the same callback, so
  /// in-process callers (`TestClient`) run the same work.
  public static func answeredByCallback(
    _ method: String, _ template: String, auth: AuthRequirement = .none, _ answer: @escaping CallbackAnswer
  ) -> Route {
    var route = Route(method, template, auth: auth) { request in
      try await withCheckedThrowingContinuation { continuation in
        answer(request) { continuation.resume(with: $0) }
      }
    }
    route.callbackAnswer = answer
    return route
  }
}
