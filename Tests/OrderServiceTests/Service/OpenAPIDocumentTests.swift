import Foundation
import GrocerCore
import GrocerHTTP
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

  @Test func everyRegisteredRouteIsDocumentedAndEveryDocumentedOperationIsRegistered() throws {
    let router = try Self.router()
    let registered = Set(router.registeredRoutes.map { "\($0.method) \($0.template)" })
    let documented = try OpenAPIDocumentCheck(bytes: OrderServiceOpenAPI.json).operations
    #expect(registered.subtracting(documented).sorted() == [], "registered but not documented")
    #expect(documented.subtracting(registered).sorted() == [], "documented but not registered")
    #expect(registered.contains("GET /openapi.json"))
  }

  @Test func embeddedDocumentIsTheCheckedInFileByteForByte() throws {
    let url = try #require(OpenAPIDocumentCheck.repositoryFile(Self.file, from: #filePath))
    let onDisk = [UInt8](try Data(contentsOf: url))
    #expect(OrderServiceOpenAPI.json == onDisk, "run deploy/openapi/embed.sh after editing \(Self.file)")
  }

  @Test func documentIsOpenAPI31WithInfoAndEveryReferenceResolves() throws {
    let check = try OpenAPIDocumentCheck(bytes: OrderServiceOpenAPI.json)
    #expect(check.version == "3.1.0")
    #expect(check.hasInfo)
    #expect(check.unresolvedReferences == [])
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
