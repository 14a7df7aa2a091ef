import Foundation
import GrocerHTTP
import GrocerHTTPTesting
import GrocerTestSupport
import Testing

@testable import CartService

/// `deploy/openapi/cart-service.json` describes exactly the routes CartService registers, and the
/// service serves it, as embedded, at `GET /openapi.json` (no token, answered from memory).
@Suite struct CartServiceOpenAPIDocumentTests {
  static let file = "deploy/openapi/cart-service.json"

  @Test func theDocumentDescribesExactlyTheRegisteredRoutesAndIsTheCheckedInFile() throws {
    try OpenAPIDocumentCheck.expectDescribes(
      try CartFixture(seed: false).app.router.registeredRoutes, embedded: CartServiceOpenAPI.json,
      file: Self.file)
  }

  @Test func getOpenAPIJSONAnswersTheDocumentWithoutATokenFromMemory() async throws {
    let router = try CartFixture(seed: false).app.router
    let immediate = router.respondImmediately(to: HTTPRequest(method: "GET", target: "/openapi.json"))
    #expect(immediate?.status == 200)
    let response = await TestClient(router).get("/openapi.json")
    #expect(response.status == 200)
    #expect(response.headers["Content-Type"] == "application/json")
    #expect(response.body == CartServiceOpenAPI.json)
  }
}
