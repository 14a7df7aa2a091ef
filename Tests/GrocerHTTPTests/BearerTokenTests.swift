import Testing

@testable import GrocerHTTP

@Suite struct BearerTokenTests {
  @Test(
    arguments: [
      ("Bearer abc.def.ghi", "abc.def.ghi"), ("bearer abc", "abc"), ("BEARER abc", "abc"),
      ("  Bearer   abc  ", "abc"),
    ] as [(String, String)])
  func theTokenOfABearerCredentialIsRead(header: String, token: String) {
    #expect(AuthMiddleware.bearerToken(header) == token)
  }

  @Test(arguments: ["", " ", "Bearer", "Bearer ", "Basic abc", "Bearer a b", "Bearerabc", "Bear abc"])
  func anythingElseHasNoToken(header: String) {
    #expect(AuthMiddleware.bearerToken(header) == nil)
  }
}
