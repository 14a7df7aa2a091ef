import Foundation
import GrocerCore
import GrocerHTTP
import Testing

@Suite struct RouterIntrospectionTests {
  @Test func registeredRoutesListEveryMethodAndTemplateOnceSorted() {
    var router = Router(logger: .discarding())
    router.get("/v1/hubs/{hub}", .sync { _ in .noContent() })
    router.put("/v1/hubs/{hub}", .sync { _ in .noContent() })
    router.get("/v1/hubs/{hub}/products/{sku}", .sync { _ in .noContent() })
    router.post("/v1/hubs/{hub}/stock/{sku}/adjustments", .sync { _ in .noContent() })
    router.get("/health/live", .sync { _ in .noContent() })
    let routes = router.registeredRoutes.map { "\($0.method) \($0.template)" }
    #expect(
      routes == [
        "GET /health/live", "GET /v1/hubs/{hub}", "PUT /v1/hubs/{hub}", "GET /v1/hubs/{hub}/products/{sku}",
        "POST /v1/hubs/{hub}/stock/{sku}/adjustments",
      ])
  }

  @Test func anEmptyRouterHasNoRoutes() {
    #expect(Router(logger: .discarding()).registeredRoutes.isEmpty)
  }

  @Test func theOpenAPIDocumentIsServedAsJSONWithoutAuthFromMemory() async {
    var router = Router(
      middleware: [AuthMiddleware(verifier: FakeVerifier())], logger: .discarding())
    let document = Array(#"{"openapi":"3.1.0"}"#.utf8)
    router.addOpenAPIDocument(document)
    let immediate = router.respondImmediately(to: HTTPRequest(method: "GET", target: "/openapi.json"))
    #expect(immediate?.status == 200)
    #expect(immediate?.body == document)
    #expect(immediate?.headers["Content-Type"] == "application/json")
    #expect(router.registeredRoutes.map(\.template) == ["/openapi.json"])
  }
}
