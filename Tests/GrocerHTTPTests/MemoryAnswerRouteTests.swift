import GrocerCore
import GrocerHTTP
import GrocerHTTPTesting
import GrocerRuntime
import Testing

@Suite struct MemoryAnswerRouteTests {
  private func router() -> Router {
    var router = Router(
      middleware: [RequestIDMiddleware(ids: SequentialIDs(prefix: "req"))], logger: .discarding())
    router.add(
      Route("GET", "/cache/{key}", { _ in .text("from storage") })
        .answeringFromMemory { request in
          request.pathParameters["key"] == "hit" ? .text("from memory") : nil
        })
    router.get("/plain", { _ in .text("plain") })
    return router
  }

  @Test func aHitIsAnsweredInsideTheCallback() {
    let response = router().respondImmediately(to: HTTPRequest(method: "GET", target: "/cache/hit"))
    #expect(response?.bodyString == "from memory")
    #expect(response?.headers["X-Request-ID"] == "req-1")
  }

  @Test func aMissIsLeftToTheAsyncPath() async {
    let router = router()
    #expect(router.respondImmediately(to: HTTPRequest(method: "GET", target: "/cache/miss")) == nil)
    let response = await router.respond(to: HTTPRequest(method: "GET", target: "/cache/miss"))
    #expect(response.bodyString == "from storage")
    #expect(response.status == 200)
  }

  @Test func aMissKeepsTheRequestIDItsImmediateAttemptGave() async {
    let router = router()
    var request = HTTPRequest(method: "GET", target: "/cache/miss")
    #expect(router.respondImmediately(to: &request) == nil)
    #expect(request.requestID == "req-1")
    let response = await router.respond(to: request)
    #expect(response.bodyString == "from storage")
    #expect(response.headers["X-Request-ID"] == "req-1")
    #expect(response.headers.values(for: "X-Request-ID").count == 1)
  }

  @Test func aRouteWithoutAMemoryAnswerAndAnUnknownPathAreLeftToTheAsyncPath() async {
    let router = router()
    #expect(router.respondImmediately(to: HTTPRequest(method: "GET", target: "/plain")) == nil)
    #expect(router.respondImmediately(to: HTTPRequest(method: "GET", target: "/nowhere")) == nil)
    #expect(await router.respond(to: HTTPRequest(method: "GET", target: "/plain")).bodyString == "plain")
    #expect(await router.respond(to: HTTPRequest(method: "GET", target: "/nowhere")).status == 404)
  }

  @Test func aMissIsCountedAndLoggedOnceLikeAHit() async {
    let registry = MetricsRegistry()
    let sink = LogSink.memory()
    var router = Router(
      middleware: [
        RequestIDMiddleware(ids: SequentialIDs(prefix: "req")), MetricsMiddleware(registry: registry),
        AccessLogMiddleware(logger: Logger(label: "test", level: .debug, sink: sink), level: .info),
      ], logger: .discarding())
    router.add(
      Route("GET", "/cache/{key}", { _ in .text("from storage") })
        .answeringFromMemory { request in request.pathParameters["key"] == "hit" ? .text("from memory") : nil
        })
    let client = TestClient(router)
    #expect(await client.get("/cache/hit").bodyString == "from memory")
    #expect(await client.get("/cache/miss").bodyString == "from storage")
    #expect(
      registry.render().contains(#"http_requests_total{method="GET",route="/cache/{key}",status="200"} 2"#))
    let lines = sink.lines.filter { $0.contains("request answered") }
    #expect(lines.count == 2)
    #expect(lines.last?.contains(#""request.id":"req-2""#) == true)
  }

  @Test func theTestClientTakesTheSamePath() async {
    let client = TestClient(router())
    #expect(await client.get("/cache/hit").bodyString == "from memory")
    #expect(await client.get("/cache/miss").bodyString == "from storage")
  }
}

@Suite struct SeenPathTests {
  @Test func aPathSeenBeforeGetsItsOwnParametersEveryTime() async {
    var router = Router(logger: .discarding())
    router.get(
      "/v1/hubs/{hub}/products/{sku}",
      { request in
        .text("\(request.pathParameters["hub"]!)/\(request.pathParameters["sku"]!) \(request.route!)")
      })
    let client = TestClient(router)
    for _ in 0..<2 {
      #expect(await client.get("/v1/hubs/h1/products/p1").bodyString == "h1/p1 /v1/hubs/{hub}/products/{sku}")
      #expect(
        await client.get("/v1/hubs/h2/products/p%2F9").bodyString == "h2/p/9 /v1/hubs/{hub}/products/{sku}")
    }
    #expect(await client.send("POST", "/v1/hubs/h1/products/p1").status == 405)
  }

  @Test func addingARouteForgetsWhatWasSeen() async {
    var router = Router(logger: .discarding())
    router.get("/v1/{anything}", { _ in .text("parameter") })
    #expect(await TestClient(router).get("/v1/health").bodyString == "parameter")
    router.get("/v1/health", { _ in .text("literal") })
    #expect(await TestClient(router).get("/v1/health").bodyString == "literal")
  }
}
