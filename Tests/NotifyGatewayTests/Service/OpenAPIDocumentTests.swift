import Foundation
import GrocerHTTP
import GrocerHTTPTesting
import GrocerTestSupport
import Testing

@testable import NotifyGateway

/// `deploy/openapi/notify-gateway.json` describes exactly the routes NotifyGateway registers, and the
/// service serves it, as embedded, at `GET /openapi.json` (no token, answered from memory).
@Suite struct NotifyGatewayOpenAPIDocumentTests {
  static let file = "deploy/openapi/notify-gateway.json"

  @Test func theDocumentDescribesExactlyTheRegisteredRoutesAndIsTheCheckedInFile() throws {
    try OpenAPIDocumentCheck.expectDescribes(
      try NotifyFixture().app.router.registeredRoutes, embedded: NotifyGatewayOpenAPI.json, file: Self.file)
  }

  @Test func getOpenAPIJSONAnswersTheDocumentWithoutATokenFromMemory() async throws {
    let router = try NotifyFixture().app.router
    let immediate = router.respondImmediately(to: HTTPRequest(method: "GET", target: "/openapi.json"))
    #expect(immediate?.status == 200)
    let response = await TestClient(router).get("/openapi.json")
    #expect(response.status == 200)
    #expect(response.headers["Content-Type"] == "application/json")
    #expect(response.body == NotifyGatewayOpenAPI.json)
  }
}
