import Foundation
import GrocerHTTP
import GrocerTestSupport
import Testing

@testable import NotifyGateway

/// `deploy/openapi/notify-gateway.json` describes exactly the routes NotifyGateway registers, and the
/// service serves it, as embedded, at `GET /openapi.json` (no token, answered from memory).
@Suite struct NotifyGatewayOpenAPIDocumentTests {
  static let file = "deploy/openapi/notify-gateway.json"

  @Test func everyRegisteredRouteIsDocumentedAndEveryDocumentedOperationIsRegistered() throws {
    let router = try NotifyFixture().app.router
    let registered = Set(router.registeredRoutes.map { "\($0.method) \($0.template)" })
    let documented = try OpenAPIDocumentCheck(bytes: NotifyGatewayOpenAPI.json).operations
    #expect(registered.subtracting(documented).sorted() == [], "registered but not documented")
    #expect(documented.subtracting(registered).sorted() == [], "documented but not registered")
    #expect(registered.contains("GET /openapi.json"))
  }

  @Test func embeddedDocumentIsTheCheckedInFileByteForByte() throws {
    let url = try #require(OpenAPIDocumentCheck.repositoryFile(Self.file, from: #filePath))
    let onDisk = [UInt8](try Data(contentsOf: url))
    #expect(NotifyGatewayOpenAPI.json == onDisk, "run deploy/openapi/embed.sh after editing \(Self.file)")
  }

  @Test func documentIsOpenAPI31WithInfoAndEveryReferenceResolves() throws {
    let check = try OpenAPIDocumentCheck(bytes: NotifyGatewayOpenAPI.json)
    #expect(check.version == "3.1.0")
    #expect(check.hasInfo)
    #expect(check.unresolvedReferences == [])
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
