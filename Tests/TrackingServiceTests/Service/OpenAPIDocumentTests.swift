import Foundation
import GrocerHTTP
import GrocerHTTPTesting
import GrocerTestSupport
import Testing

@testable import TrackingService

/// `deploy/openapi/tracking-service.json` describes exactly the routes TrackingService registers, and the
/// service serves it, as embedded, at `GET /openapi.json` (no token, answered from memory).
@Suite struct TrackingServiceOpenAPIDocumentTests {
  static let file = "deploy/openapi/tracking-service.json"

  @Test func theDocumentDescribesExactlyTheRegisteredRoutesAndIsTheCheckedInFile() throws {
    try OpenAPIDocumentCheck.expectDescribes(
      try TrackingFixture().app.router.registeredRoutes, embedded: TrackingServiceOpenAPI.json,
      file: Self.file)
  }

  @Test func getOpenAPIJSONAnswersTheDocumentWithoutATokenFromMemory() async throws {
    let router = try TrackingFixture().app.router
    let immediate = router.respondImmediately(to: HTTPRequest(method: "GET", target: "/openapi.json"))
    #expect(immediate?.status == 200)
    let response = await TestClient(router).get("/openapi.json")
    #expect(response.status == 200)
    #expect(response.headers["Content-Type"] == "application/json")
    #expect(response.body == TrackingServiceOpenAPI.json)
  }
}
