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

  @Test(arguments: [
    0, -0.0, 13, 52.5001, -13.4, 0.1, 1e-05, 1.5e300, 123_456_789.125, Double.leastNonzeroMagnitude,
  ])
  func doublesAreWrittenLikeTheEncoder(value: Double) throws {
    var out = JSONBytes()
    out.double(value)
    #expect(
      String(decoding: out.bytes, as: UTF8.self) == String(decoding: try JSON.encode(value), as: UTF8.self))
  }

  @Test func aNumberThatIsNotFiniteIsWrittenAsNull() {
    var out = JSONBytes()
    out.beginArray()
    out.double(.nan)
    out.double(.infinity)
    out.endArray()
    #expect(String(decoding: out.bytes, as: UTF8.self) == "[null,null]")
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
