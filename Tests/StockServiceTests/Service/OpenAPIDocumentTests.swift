import Foundation
import GrocerHTTP
import GrocerHTTPTesting
import GrocerTestSupport
import Testing

@testable import StockService

/// `deploy/openapi/stock-service.json` describes exactly the routes StockService registers, and the
/// service serves it, as embedded, at `GET /openapi.json` (no token, answered from memory).
@Suite struct StockServiceOpenAPIDocumentTests {
  static let file = "deploy/openapi/stock-service.json"

  @Test func theDocumentDescribesExactlyTheRegisteredRoutesAndIsTheCheckedInFile() throws {
    try OpenAPIDocumentCheck.expectDescribes(
      try StockFixture().app.router.registeredRoutes, embedded: StockServiceOpenAPI.json, file: Self.file)
  }

  @Test func getOpenAPIJSONAnswersTheDocumentWithoutATokenFromMemory() async throws {
    let router = try StockFixture().app.router
    let immediate = router.respondImmediately(to: HTTPRequest(method: "GET", target: "/openapi.json"))
    #expect(immediate?.status == 200)
    let response = await TestClient(router).get("/openapi.json")
    #expect(response.status == 200)
    #expect(response.headers["Content-Type"] == "application/json")
    #expect(response.body == StockServiceOpenAPI.json)
  }
}
