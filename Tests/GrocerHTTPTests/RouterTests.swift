import Foundation
import GrocerCore
import GrocerHTTP
import GrocerHTTPTesting
import GrocerRuntime
import Testing

/// Accepts a few fixed tokens, so auth behaviour is tested without signatures.
struct FakeVerifier: TokenVerifier {
  func verify(_ token: String) throws(TokenError) -> Principal {
    switch token {
    case "customer-token": return Principal(subject: "u1", role: .customer)
    case "staff-token": return Principal(subject: "s1", role: .staff, hubs: ["h1"])
    case "expired-token": throw .expired
    default: throw .badSignature
    }
  }
}

struct Problem: Decodable {
  var type: String
  var title: String
  var status: Int
  var detail: String
  var code: String
}

struct Basket: Codable {
  var sku: String
  var quantity: Int
}

struct Boom: Error {}

func makeRouter(
  registry: MetricsRegistry = MetricsRegistry(), logSink: LogSink = .discard
) -> Router {
  let logger = Logger(label: "test", level: .debug, sink: logSink)
  var router = Router(
    middleware: [
      RequestIDMiddleware(ids: SequentialIDs(prefix: "req")),
      MetricsMiddleware(registry: registry),
      AuthMiddleware(verifier: FakeVerifier()),
      AccessLogMiddleware(logger: logger, level: .info),
    ], logger: logger)
  // Answered inside the transport's callback, as StockService's lookup is.
  let stock: @Sendable (HTTPRequest) throws -> HTTPResponse = { request in
    let ids = request.query["ids"] ?? ""
    return .text("\(try request.pathParameter("hub")) \(ids)")
  }
  router.add(Route("GET", "/v1/hubs/{hub}/stock", { try stock($0) }).answeringFromMemory { try stock($0) })
  router.get(
    "/v1/hubs/{hub}/products/{sku}",
    { request in .text("\(request.pathParameters["hub"]!)|\(request.pathParameters["sku"]!)") })
  router.get("/v1/hubs/special/stock", { _ in .text("literal") })
  router.put("/v1/hubs/{hub}/products/{sku}", auth: .roles([.staff]), { _ in .noContent() })
  router.get(
    "/v1/me", auth: .required,
    { request in .text(request.principal?.subject ?? "nobody") })
  router.get("/v1/public", { request in .text(request.principal?.subject ?? "anonymous") })
  router.get(
    "/v1/personal", auth: .optional, { request in .text(request.principal?.subject ?? "anonymous") })
  router.post(
    "/v1/baskets",
    { request in
      let basket = try request.decode(Basket.self)
      return try .json(status: 201, value: basket)
    })
  router.get("/v1/boom", { _ in throw Boom() })
  router.get("/v1/echo", { request in .text("\(request.path)?\(request.rawQuery)") })
  router.addOperationalRoutes(registry: registry, brokerNodes: { ["publisher": "127.0.0.1:5673"] }) {
    ["database": true, "broker": false]
  }
  return router
}

@Suite struct RouterTests {
  let client = TestClient(makeRouter())

  @Test func aTemplateMatchesAndItsParametersArePercentDecoded() async {
    let response = await client.get("/v1/hubs/h%201/products/a%2Fb")
    #expect(response.status == 200)
    #expect(response.bodyString == "h 1|a/b")
  }

  @Test func aLiteralSegmentBeatsAParameter() async {
    #expect(await client.get("/v1/hubs/special/stock").bodyString == "literal")
    #expect(await client.get("/v1/hubs/h1/stock?ids=a,b").bodyString == "h1 a,b")
  }

  @Test func queryValuesAreDecodedWithPlusAsSpaceAndTheLastValueWins() async {
    let request = HTTPRequest(method: "GET", target: "/v1/echo?ids=a%2Cb&x=1+2&x=3&flag")
    #expect(request.query == ["ids": "a,b", "x": "3", "flag": ""])
    #expect(request.rawQuery == "ids=a%2Cb&x=1+2&x=3&flag")
    #expect(request.path == "/v1/echo")
  }

  /// One parameter read without the whole dictionary gives what the dictionary gives.
  @Test func aSingleQueryParameterIsReadAsTheWholeQueryReadsIt() {
    for target in [
      "/e?ids=a%2Cb&x=1+2&x=3&flag", "/e?ids=p1,p2", "/e?i%64s=p3&ids=p4", "/e?ids", "/e?idsx=1&x=ids",
      "/e?ids=&ids=p5", "/e?a+b=c&ids=%zz", "/e", "/e?&&ids=p6&&", "/e?ids=a+b&x=%ff,%C3%A9",
      "/e?ids=p%C3&ids=q\u{E9}",
    ] {
      let request = HTTPRequest(method: "GET", target: target)
      for name in ["ids", "x", "flag", "a b", "missing"] {
        #expect(request.queryParameter(name) == request.query[name], "\(target) \(name)")
      }
    }
  }

  @Test func anUnknownPathIsA404Problem() async throws {
    let response = await client.get("/v1/nowhere")
    #expect(response.status == 404)
    #expect(response.headers["content-type"] == "application/problem+json")
    let problem = try response.json(as: Problem.self)
    #expect(problem.status == 404)
    #expect(problem.code == "routeNotFound")
    #expect(problem.type == "https://grocer.example/problems/routeNotFound")
    #expect(problem.title == "Not Found")
    #expect(!problem.detail.isEmpty)
  }

  @Test func aKnownPathWithAnotherMethodIs405WithAllow() async throws {
    let response = await client.send("DELETE", "/v1/hubs/h1/products/p1")
    #expect(response.status == 405)
    #expect(response.headers["Allow"] == "GET, HEAD, PUT")
    #expect(try response.json(as: Problem.self).code == "methodNotAllowed")
  }

  @Test func headIsAnsweredByTheGetRoute() async {
    #expect(await client.send("HEAD", "/v1/hubs/h1/stock").status == 200)
  }

  @Test func aSaneRequestIDIsAcceptedAndEchoed() async {
    let response = await client.get("/v1/public", headers: ["X-Request-ID": "abc-123"])
    #expect(response.headers["x-request-id"] == "abc-123")
  }

  @Test func aMissingOrInsaneRequestIDIsReplacedByAGeneratedOne() async {
    let generated = await client.get("/v1/public")
    #expect(generated.headers["X-Request-ID"]?.hasPrefix("req-") == true)
    let insane = await client.get("/v1/public", headers: ["X-Request-ID": String(repeating: "x", count: 129)])
    #expect(insane.headers["X-Request-ID"]?.hasPrefix("req-") == true)
    let spaced = await client.get("/v1/public", headers: ["X-Request-ID": "a b"])
    #expect(spaced.headers["X-Request-ID"]?.hasPrefix("req-") == true)
  }

  @Test func aRequiredTokenThatIsMissingIs401WithBearerChallenge() async throws {
    let response = await client.get("/v1/me")
    #expect(response.status == 401)
    #expect(response.headers["WWW-Authenticate"] == "Bearer")
    #expect(try response.json(as: Problem.self).code == "unauthorized")
  }

  @Test func aBadOrExpiredTokenIs401() async throws {
    for token in ["forged", "expired-token"] {
      let response = await client.get("/v1/me", headers: ["Authorization": "Bearer \(token)"])
      #expect(response.status == 401)
      #expect(response.headers["WWW-Authenticate"] == "Bearer")
    }
    let notBearer = await client.get("/v1/me", headers: ["Authorization": "Basic dTpw"])
    #expect(notBearer.status == 401)
  }

  @Test func aValidTokenSetsThePrincipal() async {
    let response = await client.get("/v1/me", headers: ["Authorization": "bearer customer-token"])
    #expect(response.status == 200)
    #expect(response.bodyString == "u1")
  }

  @Test func aValidTokenWithTheWrongRoleIs403() async throws {
    let customer = await client.send(
      "PUT", "/v1/hubs/h1/products/p1", headers: ["Authorization": "Bearer customer-token"])
    #expect(customer.status == 403)
    let staff = await client.send(
      "PUT", "/v1/hubs/h1/products/p1", headers: ["Authorization": "Bearer staff-token"])
    #expect(staff.status == 204)
  }

  @Test func aPublicRouteNeverLooksAtTheToken() async {
    #expect(
      await client.get("/v1/public", headers: ["Authorization": "Bearer forged"]).bodyString == "anonymous")
    #expect(
      await client.get("/v1/public", headers: ["Authorization": "Bearer customer-token"]).bodyString
        == "anonymous")
  }

  @Test func anOptionalAuthRouteIgnoresABadTokenButUsesAGoodOne() async {
    #expect(
      await client.get("/v1/personal", headers: ["Authorization": "Bearer forged"]).bodyString == "anonymous")
    #expect(
      await client.get("/v1/personal", headers: ["Authorization": "Bearer customer-token"]).bodyString == "u1"
    )
  }

  @Test func aValidJSONBodyIsDecoded() async throws {
    let response = try await client.post("/v1/baskets", json: Basket(sku: "p1", quantity: 2))
    #expect(response.status == 201)
    #expect(try response.json(as: Basket.self).quantity == 2)
  }

  @Test func malformedJSONIs400() async throws {
    let response = await client.send(
      "POST", "/v1/baskets", headers: ["Content-Type": "application/json"], body: "{\"sku\": ")
    #expect(response.status == 400)
    #expect(try response.json(as: Problem.self).code == "malformedJSON")
  }

  @Test func aBodyThatIsNotJSONIs415() async throws {
    let response = await client.send(
      "POST", "/v1/baskets", headers: ["Content-Type": "text/plain"], body: "{}")
    #expect(response.status == 415)
    let missing = await client.send("POST", "/v1/baskets", body: "{}")
    #expect(missing.status == 415)
  }

  @Test func wrongTypesAndMissingFieldsAre400NamingTheField() async throws {
    let wrongType = await client.send(
      "POST", "/v1/baskets", headers: ["Content-Type": "application/json; charset=utf-8"],
      body: #"{"sku":"p1","quantity":"two"}"#)
    #expect(wrongType.status == 400)
    let problem = try wrongType.json(as: Problem.self)
    #expect(problem.code == "invalidBody")
    #expect(problem.detail.contains("quantity"))
    let missing = await client.send(
      "POST", "/v1/baskets", headers: ["Content-Type": "application/json"], body: #"{"sku":"p1"}"#)
    #expect(missing.status == 400)
    #expect(try missing.json(as: Problem.self).detail.contains("quantity"))
  }

  @Test func aBodyOverTheLimitIs413() async throws {
    let response = await client.send(
      "POST", "/v1/baskets", headers: ["Content-Type": "application/json"],
      body: [UInt8](repeating: 0x20, count: 64 * 1024 + 1))
    #expect(response.status == 413)
    #expect(try response.json(as: Problem.self).code == "payloadTooLarge")
  }

  @Test func anUnexpectedErrorIsA500ThatLeaksNothingAndIsLogged() async throws {
    let sink = LogSink.memory()
    let client = TestClient(makeRouter(logSink: sink))
    let response = await client.get("/v1/boom")
    #expect(response.status == 500)
    #expect(!response.bodyString.contains("Boom"))
    #expect(try response.json(as: Problem.self).code == "internalError")
    #expect(sink.lines.contains { $0.contains("request handler failed") && $0.contains("Boom") })
  }

  @Test func metricsAreLabelledByRouteTemplate() async {
    let registry = MetricsRegistry()
    let client = TestClient(makeRouter(registry: registry))
    _ = await client.get("/v1/hubs/h1/stock?ids=a")
    _ = await client.get("/v1/hubs/h2/stock?ids=a")
    _ = await client.get("/v1/nowhere")
    let text = registry.render()
    #expect(text.contains(#"http_requests_total{method="GET",route="/v1/hubs/{hub}/stock",status="200"} 2"#))
    #expect(text.contains(#"http_requests_total{method="GET",route="unmatched",status="404"} 1"#))
    #expect(
      text.contains(#"http_request_duration_seconds_count{method="GET",route="/v1/hubs/{hub}/stock"} 2"#))
    #expect(!text.contains("h1"))
  }

  /// One middleware in two routers: each router numbers its routes from 0, and the counts still
  /// go to each route's own template, per method and status.
  @Test func aMetricsMiddlewareSharedByTwoRoutersCountsEachRouteApart() async {
    let registry = MetricsRegistry()
    let metrics = MetricsMiddleware(registry: registry)
    var first = Router(middleware: [metrics], logger: .discarding())
    first.get("/a", { _ in .text("a") })
    first.post("/a", { _ in throw HTTPError.conflict(code: "no", detail: "no") })
    var second = Router(middleware: [metrics], logger: .discarding())
    second.get("/b", { _ in .text("b") })
    for _ in 0..<3 { _ = await TestClient(first).get("/a") }
    _ = await TestClient(first).send("POST", "/a")
    for _ in 0..<2 { _ = await TestClient(second).get("/b") }
    _ = await TestClient(first).get("/a")
    let text = registry.render()
    #expect(text.contains(#"http_requests_total{method="GET",route="/a",status="200"} 4"#))
    #expect(text.contains(#"http_requests_total{method="POST",route="/a",status="409"} 1"#))
    #expect(text.contains(#"http_requests_total{method="GET",route="/b",status="200"} 2"#))
  }

  @Test func theAccessLogHasOneLinePerRequest() async {
    let sink = LogSink.memory()
    let client = TestClient(makeRouter(logSink: sink))
    _ = await client.get("/v1/hubs/h1/stock", headers: ["X-Request-ID": "r-1"])
    let lines = sink.lines.filter { $0.contains("request answered") }
    #expect(lines.count == 1)
    #expect(lines.first?.contains(#""request.id":"r-1""#) == true)
    #expect(lines.first?.contains(#""http.route":"/v1/hubs/{hub}/stock""#) == true)
    #expect(lines.first?.contains(#""http.status":"200""#) == true)
  }

  @Test func operationalRoutesAnswerLiveReadyAndMetrics() async throws {
    #expect(await client.get("/health/live").status == 200)
    let ready = await client.get("/health/ready")
    #expect(ready.status == 503)
    #expect(ready.headers["Retry-After"] != nil)
    #expect(try ready.json(as: Problem.self).detail.contains("broker"))
    #expect(ready.bodyString.contains(#""brokerNodes":{"publisher":"127.0.0.1:5673"}"#))
    let metrics = await client.get("/metrics")
    #expect(metrics.headers["Content-Type"]?.hasPrefix("text/plain; version=0.0.4") == true)
  }
}

@Suite struct HTTPHeadersTests {
  @Test func namesMatchIgnoringASCIICaseOnly() {
    var headers = HTTPHeaders()
    headers.add("X-Request-ID", "a")
    headers.add("Content-Type", "text/plain")
    headers.add("x-request-id", "b")
    #expect(headers["x-REQUEST-id"] == "a")
    #expect(headers.values(for: "X-Request-Id") == ["a", "b"])
    #expect(headers["X-Request-I"] == nil)
    #expect(headers["X-Request-IDs"] == nil)
    #expect(headers["X_Request-ID"] == nil)  // `_` is not `-` in another case
    #expect(headers["Content-Typé"] == nil)
    headers.remove("CONTENT-TYPE")
    #expect(headers.count == 2)
  }
}
