import Foundation
import GrocerCore
import GrocerHTTP
import GrocerHTTPTesting
import GrocerRuntime
import GrocerTestSupport
import Testing

@testable import OrderService

/// `deploy/openapi/order-service.json` describes exactly the routes OrderService registers, and the
/// service serves it, as embedded, at `GET /openapi.json` (no token, answered from memory).
@Suite struct OrderServiceOpenAPIDocumentTests {
  static let file = "deploy/openapi/order-service.json"

  /// OrderService built on a temporary data directory; nothing is started, so no broker is needed.
  static func router() throws -> Router {
    let unique = UUID().uuidString.prefix(8).lowercased()
    let configuration = OrderServiceConfiguration(
      settings: Settings([
        "GROCER_DATA_DIR": NSTemporaryDirectory() + "grocer-order-openapi-\(unique)",
        "GROCER_JWT_SECRET": "order-openapi-secret",
      ]))
    return try buildOrderService(configuration: configuration, logger: .discarding()).router
  }

  @Test func theDocumentDescribesExactlyTheRegisteredRoutesAndIsTheCheckedInFile() throws {
    try OpenAPIDocumentCheck.expectDescribes(
      try Self.router().registeredRoutes, embedded: OrderServiceOpenAPI.json, file: Self.file)
  }

  @Test func getOpenAPIJSONAnswersTheDocumentWithoutATokenFromMemory() async throws {
    let router = try Self.router()
    let immediate = router.respondImmediately(to: HTTPRequest(method: "GET", target: "/openapi.json"))
    #expect(immediate?.status == 200)
    let response = await TestClient(router).get("/openapi.json")
    #expect(response.status == 200)
    #expect(response.headers["Content-Type"] == "application/json")
    #expect(response.body == OrderServiceOpenAPI.json)
  }
}
