import GrocerCore
import Testing

@testable import GrocerAuth

@Suite struct JWTJSONTests {
  private func parse(_ text: String) -> [String: JSONValue]? { JWTJSON.parseObject(Array(text.utf8)) }

  @Test func readsAFlatClaimSet() throws {
    let object = try #require(
      parse(
        #" { "sub" : "u1", "exp": 1790003600, "n": -1.5e2, "ok": true, "no": false, "x": null, "a": ["h1"] } "#
      ))
    #expect(object["sub"] == .string("u1"))
    #expect(object["exp"] == .number(1_790_003_600))
    #expect(object["n"] == .number(-150))
    #expect(object["ok"] == .bool(true))
    #expect(object["no"] == .bool(false))
    #expect(object["x"] == .null)
    #expect(object["a"] == .array([.string("h1")]))
  }

  @Test func readsNestedValuesItIgnoresLater() throws {
    let object = try #require(parse(#"{"extra":{"deep":[1,{"a":[]},{}]}}"#))
    #expect(object["extra"]?["deep"] == .array([.number(1), .object(["a": .array([])]), .object([:])]))
  }

  @Test func decodesEscapesAndSurrogatePairs() throws {
    let object = try #require(parse(#"{"s":"a\"b\\c\/d\n\t\u00e9\ud83d\ude00"}"#))
    #expect(object["s"] == .string("a\"b\\c/d\n\t\u{e9}\u{1F600}"))
  }

  @Test(arguments: [
    "", "[]", "\"s\"", "{", "{\"a\":1,}", "{\"a\":1}x", "{\"a\" 1}", "{a:1}", "{\"a\":01}", "{\"a\":1.}",
    "{\"a\":1e}", "{\"a\":-}", "{\"a\":1e999}", "{\"a\":NaN}", "{\"a\":tru}", "{\"a\":\"\\x\"}",
    "{\"a\":\"\\ud800\"}", "{\"a\":\"\\udc00\"}", "{\"a\":\"\u{01}\"}", "{\"a\":1,\"a\":2}",
  ])
  func refusesWhatIsNotOneStrictJSONObject(_ text: String) {
    #expect(parse(text) == nil)
  }

  @Test func refusesInvalidUTF8() {
    #expect(JWTJSON.parseObject([0x7b, 0x22, 0x61, 0x22, 0x3a, 0x22, 0xff, 0x22, 0x7d]) == nil)
  }

  @Test func limitsNestingDepth() {
    let deep = "{\"a\":" + String(repeating: "[", count: 10_000) + String(repeating: "]", count: 10_000) + "}"
    #expect(parse(deep) == nil)
    let shallow = "{\"a\":" + String(repeating: "[", count: 10) + String(repeating: "]", count: 10) + "}"
    #expect(parse(shallow) != nil)
  }
}
