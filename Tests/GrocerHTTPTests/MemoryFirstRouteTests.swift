import GrocerCore
import GrocerHTTP
import Testing

@Suite struct MemoryFirstRouteTests {
  private func router() -> Router {
    var router = Router(
      middleware: [RequestIDMiddleware(ids: SequentialIDs(prefix: "req"))], logger: .discarding())
    router.add(
      Route(
        "GET", "/cache/{key}",
        .memoryFirst(
          { request in
            request.pathParameters["key"] == "hit" ? .text("from memory") : nil
          },
          otherwise: { _ in .text("from storage") })))
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

  @Test func theTestClientTakesTheSamePath() async {
    let client = TestClient(router())
    #expect(await client.get("/cache/hit").bodyString == "from memory")
    #expect(await client.get("/cache/miss").bodyString == "from storage")
  }
}
