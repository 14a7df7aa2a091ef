/// One endpoint: a method, a path template, what it demands of the caller and its handler.
///
/// Controllers list the routes they serve as `[Route]` and the composition root adds them to a
/// `Router`.
public struct Route: Sendable {
  /// Answers without awaiting anything; runs inside the transport's callback (the hot path).
  public typealias SyncHandler = @Sendable (inout HTTPRequest) throws -> HTTPResponse
  /// Awaits I/O; the transport suspends the connection while it runs.
  public typealias AsyncHandler = @Sendable (HTTPRequest) async throws -> HTTPResponse
  /// Answers from memory when it can (non-nil), or returns nil to have the route's async handler
  /// run with the connection suspended (a cache miss that must read the database).
  public typealias MemoryHandler = @Sendable (inout HTTPRequest) throws -> HTTPResponse?
  /// Hands its work to a queue of its own (a database writer) and calls `done` exactly once, from
  /// any thread, with the answer or the error; no Swift task runs in between (each hop costs
  /// on a small machine).
  public typealias CallbackHandler =
    @Sendable (HTTPRequest, _ done: @escaping @Sendable (Result<HTTPResponse, any Error>) -> Void) -> Void

  /// How the route answers.
  public enum Handler: Sendable {
    case sync(SyncHandler)
    case async(AsyncHandler)
    /// The hot path of a cache: in the callback on a hit, suspended on a miss.
    case memoryFirst(MemoryHandler, otherwise: AsyncHandler)
    /// Suspended while its own queue works; answered when it calls back.
    case callback(CallbackHandler)
  }

  public var method: String
  /// `/v1/hubs/{hub}/products/{sku}`: literal segments and `{name}` parameters.
  public var template: String
  public var auth: AuthRequirement
  public var handler: Handler

  public init(_ method: String, _ template: String, auth: AuthRequirement = .none, _ handler: Handler) {
    self.method = method.uppercased()
    self.template = template
    self.auth = auth
    self.handler = handler
  }
}
