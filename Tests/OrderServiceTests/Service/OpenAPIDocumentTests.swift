import Foundation
import GrocerCore
import GrocerHTTP
import GrocerHTTPTesting
import GrocerRuntime
import GrocerTestSupport
import Testing

@testable import OrderService

/// OrderService serves at `GET /openapi.json` (no token, answered from memory) a document
/// that describes exactly the routes it registers: its own part, `HTTP/openapi.json`, merged with
/// the shared one.
@Suite struct OrderServiceOpenAPIDocumentTests {
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

  @Test func theServedDocumentDescribesExactlyTheRegisteredRoutes() async throws {
    let router = try Self.router()
    let served = await TestClient(router).get("/openapi.json")
    try OpenAPIDocumentCheck.expectDescribes(router.registeredRoutes, served: served.body)
  }

  @Test func getOpenAPIJSONAnswersTheDocumentWithoutATokenFromMemory() async throws {
    let router = try Self.router()
    let direct = await router.respond(to: HTTPRequest(method: "GET", target: "/openapi.json"))
    #expect(direct.status == 200)
    let response = await TestClient(router).get("/openapi.json")
    #expect(response.status == 200)
    #expect(response.headers["Content-Type"] == "application/json")
    #expect(response.body == direct.body)
  }
}
