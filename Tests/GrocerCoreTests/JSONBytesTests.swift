import Foundation
import Testing

@testable import GrocerCore

@Suite struct JSONBytesTests {
  @Test(arguments: [0, 7, -1, 10, -10, 1_234_567, Int.max, Int.min])
  func integersAreWrittenLikeTheEncoder(value: Int) throws {
    var out = JSONBytes()
    out.int(value)
    #expect(
      String(decoding: out.bytes, as: UTF8.self) == String(decoding: try JSON.encode(value), as: UTF8.self))
  }

  @Test(arguments: ["", "plain", "a/b", "quote \" back \\ ", "\n\r\t\u{8}\u{c}\u{1}\u{1f}", "Ä 🥛 ✓"])
  func stringsAreEscapedLikeTheEncoder(value: String) throws {
    var out = JSONBytes()
    out.beginObject()
    out.key(value)
    out.string(value)
    out.endObject()
    let expected = try JSON.encode([value: value])
    #expect(String(decoding: out.bytes, as: UTF8.self) == String(decoding: expected, as: UTF8.self))
  }
}
