import GrocerCore
import GrocerFastPath
import GrocerRuntime
import Synchronization

/// Routes requests by method and path template, runs the middleware around the handler and turns
/// thrown errors into problem+json.
///
/// Matching is segment by segment over a tree; at each segment a literal beats a parameter, and
/// the match backtracks if the literal branch leads nowhere. Parameters are percent-decoded after
/// splitting, so `%2F` stays inside a parameter. An unknown path is a 404 problem, a known path
/// with another method a 405 with `Allow`; HEAD is answered by the GET route (the transport drops
/// the body). Both go through the middleware, labelled `route == nil`.
public struct Router: HTTPResponder {
  /// A route as the tree keeps it: a class, so finding it (every request) costs one reference
  /// count, not one for each closure and string inside.
  private final class Entry: Sendable {
    /// The order it was added in: `request.routeIndex`.
    let index: Int
    let template: String
    let auth: AuthRequirement
    let handler: Route.Handler
    /// The route's answer from memory, if it was registered with one: called from here (a `let`
    /// of a borrowed entry) it takes no reference count.
    let fromMemory: Route.MemoryAnswer?
    /// The route's callback answer, if it was registered with one.
    let byCallback: Route.CallbackAnswer?

    init(index: Int, route: Route) {
      self.index = index
      self.template = route.template
      self.auth = route.auth
      self.handler = route.handler
      self.fromMemory = route.memoryAnswer
      self.byCallback = route.callbackAnswer
    }
  }

  /// One segment position in the tree. Routes live on the node where their template ends.
  private struct Node: Sendable {
    var literals: [String: Node] = [:]
    var parameterName: String? = nil
    /// Zero or one child: the node after a `{parameter}` segment.
    var parameterChild: [Node] = []
    var routes: [String: Entry] = [:]
  }

  private var root = Node()
  private var routeCount = 0
  /// Paths matched before, so a path seen again (every stock lookup of a hub) costs one
  /// dictionary lookup instead of splitting, decoding and walking the tree.
  private var seen = SeenPaths()
  /// Keeps the middleware alive for `hooks`.
  private let middleware: [MiddlewareHook]
  /// The same middleware, called without reference counting: every request calls each twice,
  /// from every transport thread.
  private let hooks: [Unretained<MiddlewareHook>]
  private let logger: Logger

  /// `middleware` runs in this order before the handler and in reverse after it.
  public init(middleware: [any HTTPMiddleware] = [], logger: Logger) {
    self.middleware = middleware.map(MiddlewareHook.init)
    self.hooks = self.middleware.map(Unretained.init)
    self.logger = logger
  }

  /// A service's router with the middleware every service runs, in order: request id, auth
  /// (with `verifier`), metrics, access log.
  public init(verifier: any TokenVerifier, metrics: MetricsRegistry, logger: Logger) {
    self.init(
      middleware: [
        RequestIDMiddleware(), AuthMiddleware(verifier: verifier, logger: logger),
        MetricsMiddleware(registry: metrics), AccessLogMiddleware(logger: logger),
      ], logger: logger)
  }

  // MARK: Building

  public mutating func add(_ route: Route) {
    let segments = route.template.split(separator: "/", omittingEmptySubsequences: true).map(String.init)
    let entry = Entry(index: routeCount, route: route)
    routeCount += 1
    Self.insert(entry, method: route.method, segments: segments[...], into: &root)
    seen = SeenPaths()
  }

  public mutating func add(_ routes: [Route]) {
    for route in routes { add(route) }
  }

  public mutating func on(
    _ method: String, _ template: String, auth: AuthRequirement = .none, _ handler: @escaping Route.Handler
  ) {
    add(Route(method, template, auth: auth, handler))
  }

  public mutating func get(
    _ template: String, auth: AuthRequirement = .none, _ handler: @escaping Route.Handler
  ) {
    on("GET", template, auth: auth, handler)
  }

  public mutating func post(
    _ template: String, auth: AuthRequirement = .none, _ handler: @escaping Route.Handler
  ) {
    on("POST", template, auth: auth, handler)
  }

  public mutating func put(
    _ template: String, auth: AuthRequirement = .none, _ handler: @escaping Route.Handler
  ) {
    on("PUT", template, auth: auth, handler)
  }

  public mutating func patch(
    _ template: String, auth: AuthRequirement = .none, _ handler: @escaping Route.Handler
  ) {
    on("PATCH", template, auth: auth, handler)
  }

  public mutating func delete(
    _ template: String, auth: AuthRequirement = .none, _ handler: @escaping Route.Handler
  ) {
    on("DELETE", template, auth: auth, handler)
  }

  /// Every (method, template) added, sorted by template then method: for checking the routes
  /// against a document such as the service's OpenAPI description. Walks the route tree; not for
  /// the request path.
  public var registeredRoutes: [(method: String, template: String)] {
    var found: [(method: String, template: String)] = []
    Self.collect(root, into: &found)
    return found.sorted { ($0.template, $0.method) < ($1.template, $1.method) }
  }

  private static func collect(_ node: Node, into found: inout [(method: String, template: String)]) {
    for (method, entry) in node.routes { found.append((method, entry.template)) }
    for child in node.literals.values { collect(child, into: &found) }
    for child in node.parameterChild { collect(child, into: &found) }
  }

  private static func insert(
    _ entry: Entry, method: String, segments: ArraySlice<String>, into node: inout Node
  ) {
    guard let first = segments.first else {
      precondition(node.routes[method] == nil, "route \(method) \(entry.template) registered twice")
      node.routes[method] = entry
      return
    }
    let rest = segments.dropFirst()
    if first.hasPrefix("{") && first.hasSuffix("}") {
      let name = String(first.dropFirst().dropLast())
      precondition(
        node.parameterName == nil || node.parameterName == name,
        "conflicting parameter names at {\(name)} in \(entry.template)")
      node.parameterName = name
      if node.parameterChild.isEmpty { node.parameterChild.append(Node()) }
      insert(entry, method: method, segments: rest, into: &node.parameterChild[0])
    } else {
      insert(entry, method: method, segments: rest, into: &node.literals[first, default: Node()])
    }
  }

  // MARK: Answering

  /// The route found for a request. Its entry is kept alive by the route tree (`root`), which
  /// only ever grows, so it is referred to without a reference count.
  private enum Resolution {
    case handler(Unretained<Entry>)
    case failure(HTTPError)
  }

  /// Finds the route, fills `route`, `pathParameters` and `authRequirement`.
  private func resolve(_ request: inout HTTPRequest) -> Resolution {
    let known = seen.lookup(method: request.method, rawPath: request.rawPath) { match in
      request.route = match.entry.template
      request.routeIndex = match.entry.index
      request.authRequirement = match.entry.auth
      request.pathParameters = match.parameters
      return Unretained(match.entry)
    }
    if let known { return .handler(known) }
    let resolution = resolveFromTree(&request)
    if case .handler(let entry) = resolution {
      seen.insert(
        method: request.method, rawPath: request.rawPath,
        SeenPaths.Match(entry: entry.with { $0 }, parameters: request.pathParameters))
    }
    return resolution
  }

  private func resolveFromTree(_ request: inout HTTPRequest) -> Resolution {
    let segments = request.rawPath.utf8.split(separator: UInt8(ascii: "/")).map {
      PercentDecoding.decode(Substring($0), plusIsSpace: false)
    }
    var parameters: [(String, String)] = []
    guard let node = Self.match(root, segments[...], &parameters) else {
      return .failure(.notFound(code: "routeNotFound", detail: "no route for \(request.path)"))
    }
    let entry = node.routes[request.method] ?? (request.method == "HEAD" ? node.routes["GET"] : nil)
    guard let entry else {
      var allow = Set(node.routes.keys)
      if allow.contains("GET") { allow.insert("HEAD") }
      return .failure(.methodNotAllowed(allow: allow.sorted()))
    }
    request.route = entry.template
    request.routeIndex = entry.index
    request.authRequirement = entry.auth
    for (name, value) in parameters { request.pathParameters[name] = value }
    return .handler(Unretained(entry))
  }

  /// Resolved (method, raw path) pairs, bounded: paths come from clients, so past the bound the
  /// memory is dropped and starts again.
  private final class SeenPaths: Sendable {
    final class Match: Sendable {
      let entry: Entry
      let parameters: PathParameters

      init(entry: Entry, parameters: PathParameters) {
        self.entry = entry
        self.parameters = parameters
      }
    }

    static let capacity = 4096

    /// Read by every request, written once per new path.
    private let matches = ByteKeyIndex<Match>()

    /// `body` with the match for the path, borrowed; nil if there is none.
    func lookup<Result>(method: String, rawPath: String, _ body: (Match) -> Result) -> Result? {
      matches.find(method, rawPath, body)
    }

    func insert(method: String, rawPath: String, _ match: Match) {
      guard rawPath.utf8.count <= 256 else { return }
      if matches.count >= Self.capacity { matches.removeAll() }
      matches.insert(match, method, rawPath)
    }
  }

  private static func match(
    _ node: Node, _ segments: ArraySlice<String>, _ parameters: inout [(String, String)]
  ) -> Node? {
    guard let segment = segments.first else { return node.routes.isEmpty ? nil : node }
    let rest = segments.dropFirst()
    if let literal = node.literals[segment], let found = match(literal, rest, &parameters) {
      return found
    }
    if let name = node.parameterName, !segment.isEmpty {
      parameters.append((name, segment))
      if let found = match(node.parameterChild[0], rest, &parameters) { return found }
      parameters.removeLast()
    }
    return nil
  }

  /// Answers inside the transport's callback only for a route registered with
  /// `Route.answeringFromMemory` whose memory answers; everything else is left (nil) to
  /// `respond(to:)`.
  public func respondImmediately(to request: inout HTTPRequest) -> HTTPResponse? {
    guard case .handler(let entry) = resolve(&request) else { return nil }
    return entry.with { entry in
      entry.fromMemory != nil ? runFromMemory(&request, entry) : nil
    }
  }

  /// A route registered with `Route.answeredByCallback` runs its callback without a task; any
  /// other request is awaited by a task.
  public func respond(to request: HTTPRequest, completion: @escaping @Sendable (HTTPResponse) -> Void) {
    var request = request
    if case .handler(let entry) = resolve(&request), let callback = entry.with(\.byCallback) {
      runCallback(request, callback, completion)
      return
    }
    let router = self
    Task { completion(await router.respond(to: request)) }
  }

  public func respond(to request: HTTPRequest) async -> HTTPResponse {
    var request = request
    switch resolve(&request) {
    case .failure(let error):
      var response: HTTPResponse
      do {
        try before(&request)
        throw error
      } catch {
        response = answer(error, request)
      }
      after(request, &response)
      return response
    case .handler(let entry):
      return await run(&request, entry.with(\.handler))
    }
  }

  /// Runs the middleware and the entry's memory answer; nil (and no `after` hooks) when memory
  /// cannot answer, so the caller runs the whole chain again on the async path. `before` hooks
  /// have no side effects, which makes running them twice harmless.
  private func runFromMemory(_ request: inout HTTPRequest, _ entry: Entry) -> HTTPResponse? {
    var response: HTTPResponse
    do {
      try before(&request)
      guard let answer = try entry.fromMemory?(&request) else { return nil }
      response = answer
    } catch {
      response = answer(error, request)
    }
    after(request, &response)
    return response
  }

  /// Runs the `before` hooks, then hands the request to a callback answer; its answer (or error)
  /// goes through the `after` hooks to `completion`.
  private func runCallback(
    _ request: HTTPRequest, _ callback: Route.CallbackAnswer,
    _ completion: @escaping @Sendable (HTTPResponse) -> Void
  ) {
    var request = request
    do {
      try before(&request)
    } catch {
      var response = answer(error, request)
      after(request, &response)
      completion(response)
      return
    }
    let prepared = request
    let router = self
    callback(prepared) { result in
      var response: HTTPResponse
      switch result {
      case .success(let answer): response = answer
      case .failure(let error): response = router.answer(error, prepared)
      }
      router.after(prepared, &response)
      completion(response)
    }
  }

  private func run(_ request: inout HTTPRequest, _ handler: Route.Handler) async -> HTTPResponse {
    var response: HTTPResponse
    do {
      try before(&request)
      response = try await handler(request)
    } catch {
      response = answer(error, request)
    }
    after(request, &response)
    return response
  }

  /// The middleware's `before` hooks in order.
  private func before(_ request: inout HTTPRequest) throws(HTTPError) {
    for hook in hooks {
      // (`_withUnsafeGuaranteedRef` rethrows untyped errors: carry the typed one out.)
      let failure = hook.with { hook -> HTTPError? in
        do throws(HTTPError) {
          try hook.middleware.before(&request)
          return nil
        } catch { return error }
      }
      if let failure { throw failure }
    }
  }

  /// The middleware's `after` hooks in reverse order.
  private func after(_ request: HTTPRequest, _ response: inout HTTPResponse) {
    for hook in hooks.reversed() { hook.with { $0.middleware.after(request, &response) } }
  }

  private func answer(_ error: any Error, _ request: HTTPRequest) -> HTTPResponse {
    if let error = error as? HTTPError { return error.response }
    logger.error(
      "request handler failed",
      [
        "error": String(describing: error), "request.id": request.requestID,
        "http.method": request.method, "http.route": request.route ?? "unmatched",
      ])
    return HTTPError.internalServerError.response
  }
}

/// One middleware in a class of its own: called through an `Unretained` reference, its `let` is
/// borrowed, so a call takes no reference count (an array element, or an unowned one, does).
private final class MiddlewareHook: Sendable {
  let middleware: any HTTPMiddleware

  init(_ middleware: any HTTPMiddleware) { self.middleware = middleware }
}
