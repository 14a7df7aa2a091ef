import Testing

@testable import GrocerHTTPClient

@Suite struct CurlVersionTests {
  @Test func libcurlSpeaksHTTP2() {
    #expect(CurlVersion.text.contains("nghttp2"))
  }
}
