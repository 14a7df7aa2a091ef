import GrocerHTTP

/// The simulator's router as APNs answers paths it has no route for: 404 with `{"reason":
/// "BadPath"}` instead of our problem+json, so a provider library reading Apple's reasons reads
/// ours too. Everything else is the router's answer.
public struct APNsPathResponder: HTTPResponder {
  public let router: Router

  public init(router: Router) { self.router = router }

  public func respond(to request: HTTPRequest) async -> HTTPResponse {
    Self.apnsPaths(await router.respond(to: request))
  }

  public func respondImmediately(to request: inout HTTPRequest) -> HTTPResponse? {
    router.respondImmediately(to: &request).map(Self.apnsPaths)
  }

  static func apnsPaths(_ response: HTTPResponse) -> HTTPResponse {
    guard response.status == 404, response.bodyString.contains(#""code":"routeNotFound""#) else {
      return response
    }
    var answer = APNsSimulatorRoutes.answer(APNsResponse(status: 404, reason: "BadPath"))
    if let id = response.headers["X-Request-ID"] { answer.headers.add("X-Request-ID", id) }
    return answer
  }
}
