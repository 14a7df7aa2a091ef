import Foundation
import GrocerHTTP
import GrocerHTTPTesting
import GrocerTestSupport
import Testing

@testable import StockService

/// StockService serves at `GET /openapi.json` (no token, answered from memory) a document
/// that describes exactly the routes it registers: its own part, `HTTP/openapi.json`, merged with
/// the shared one.
@Suite struct StockServiceOpenAPIDocumentTests {
  @Test func theServedDocumentDescribesExactlyTheRegisteredRoutes() async throws {
    let router = try StockFixture().app.router
    let served = await TestClient(router).get("/openapi.json")
    try OpenAPIDocumentCheck.expectDescribes(router.registeredRoutes, served: served.body)
  }

  @Test func getOpenAPIJSONAnswersTheDocumentWithoutATokenFromMemory() async throws {
    let router = try StockFixture().app.router
    let direct = await router.respond(to: HTTPRequest(method: "GET", target: "/openapi.json"))
    #expect(direct.status == 200)
    let response = await TestClient(router).get("/openapi.json")
    #expect(response.status == 200)
    #expect(response.headers["Content-Type"] == "application/json")
    #expect(response.body == direct.body)
  }
}
