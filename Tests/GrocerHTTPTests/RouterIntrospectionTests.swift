import Foundation
import GrocerCore
import Testing

@testable import GrocerHTTP

@Suite struct RouterIntrospectionTests {
  @Test func registeredRoutesListEveryMethodAndTemplateOnceSorted() {
    var router = Router(logger: .discarding())
    router.get("/v1/hubs/{hub}", { _ in .noContent() })
    router.put("/v1/hubs/{hub}", { _ in .noContent() })
    router.get("/v1/hubs/{hub}/products/{sku}", { _ in .noContent() })
    router.post("/v1/hubs/{hub}/stock/{sku}/adjustments", { _ in .noContent() })
    router.get("/health/live", { _ in .noContent() })
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

  @Test func theOpenAPIDocumentIsServedAsJSONWithoutAuthFromMemory() async throws {
    var router = Router(
      middleware: [AuthMiddleware(verifier: FakeVerifier())], logger: .discarding())
    try router.addOpenAPIDocument(Array(#"{"openapi":"3.1.0"}"#.utf8))
    let response = await router.respond(to: HTTPRequest(method: "GET", target: "/openapi.json"))
    #expect(response.status == 200)
    #expect(response.headers["Content-Type"] == "application/json")
    let document = try JSON.decode(JSONValue.self, from: Data(response.body))
    #expect(document["openapi"] == .string("3.1.0"))
    #expect(router.registeredRoutes.map(\.template) == ["/openapi.json"])
  }

  @Test func theServedDocumentIsTheServicesPartWithTheSharedPartMergedIn() async throws {
    var router = Router(logger: .discarding())
    try router.addOpenAPIDocument(
      Array(
        #"""
        {"openapi": "3.1.0", "paths": {"/v1/things": {"get": {"operationId": "getThings"}}},
         "components": {"schemas": {"Thing": {"type": "object"}}}}
        """#.utf8))
    let body = await router.respond(to: HTTPRequest(method: "GET", target: "/openapi.json")).body
    let document = try JSON.decode(JSONValue.self, from: Data(body))
    #expect(document["openapi"] == .string("3.1.0"))
    #expect(document["paths"]?["/v1/things"]?["get"]?["operationId"] == .string("getThings"))
    #expect(document["paths"]?["/health/live"]?["get"]?["operationId"] == .string("healthLive"))
    #expect(document["components"]?["schemas"]?["Thing"] == .object(["type": .string("object")]))
    #expect(document["components"]?["schemas"]?["Money"] != nil)
    #expect(document["components"]?["securitySchemes"]?["bearerAuth"] != nil)
  }

  @Test func aServicePartGivingWhatTheSharedPartGivesIsRefused() {
    var router = Router(logger: .discarding())
    #expect(throws: OpenAPIDocument.Conflict(pointer: "#/components/schemas/Money/type")) {
      try router.addOpenAPIDocument(
        Array(#"{"components": {"schemas": {"Money": {"type": "string"}}}}"#.utf8))
    }
    #expect(throws: OpenAPIDocument.Conflict(pointer: "#/paths/~1health~1live/get/operationId")) {
      try router.addOpenAPIDocument(
        Array(#"{"paths": {"/health/live": {"get": {"operationId": "live"}}}}"#.utf8))
    }
    #expect(throws: OpenAPIDocument.Conflict(pointer: "#")) {
      try router.addOpenAPIDocument(Array("[]".utf8))
    }
    #expect(router.registeredRoutes.isEmpty)
  }
}
