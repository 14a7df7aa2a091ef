import Foundation
import GrocerCore
import Testing

@Suite struct JSONReaderTests {
  private func reader(_ text: String) -> JSONReader { JSONReader(Array(text.utf8)) }

  @Test(arguments: [
    (#""plain""#, "plain"), (#""a\"b\\c\/d""#, "a\"b\\c/d"), (#""\n\r\t\b\f""#, "\n\r\t\u{8}\u{C}"),
    (#""\u00fc\u00DF""#, "üß"), (#""\ud83d\ude00 ok""#, "😀 ok"), (#""ünï 😀""#, "ünï 😀"), (#""""#, ""),
  ])
  func stringsReadAsTheDecoderReadsThem(json: String, expected: String) throws {
    var reader = reader(json)
    #expect(try reader.readString() == expected)
    try reader.finish()
    #expect(try JSONDecoder().decode(String.self, from: Data(json.utf8)) == expected)
  }

  @Test(arguments: ["\"a", #""\x""#, #""\ud83d""#, "\"tab\there\"", #""\u12""#])
  func brokenStringsAreRefused(json: String) {
    var reader = reader(json)
    #expect(throws: JSONReader.Failure.self) { try reader.readString() }
  }

  @Test func integersAndTheirLimits() throws {
    var reader = reader("[0, -7, 9223372036854775807, 42]")
    var values: [Int] = []
    try reader.readArray { values.append(try $0.readInt()) }
    #expect(values == [0, -7, Int.max, 42])
    for bad in ["01", "1.5", "2e3", "-", "9223372036854775808", "x"] {
      var reader = self.reader(bad)
      #expect(throws: JSONReader.Failure.self, "\(bad)") { try reader.readInt() }
    }
  }

  @Test func objectsAreWalkedKeyByKeyAndUnknownValuesSkipped() throws {
    var reader = reader(
      #" { "skip": {"a": [1, 2.5e3, true, false, null, {"b": "}"}]}, "money": {"minorUnits": 129, "currency": "EUR"}, "n": null } "#
    )
    var money: Money?
    var sawNull = false
    try reader.readObject { reader, key in
      switch key {
      case "money": money = try Money(reading: &reader)
      case "n": sawNull = reader.readNull()
      default: try reader.skipValue()
      }
    }
    try reader.finish()
    #expect(money == Money(minorUnits: 129, currency: "EUR"))
    #expect(sawNull)
  }

  @Test(arguments: [#"{"a":1"#, #"{"a" 1}"#, #"{"a":1,}"#, #"[1 2]"#, #"{"a":1} x"#, #"{a:1}"#])
  func malformedDocumentsAreRefused(json: String) {
    var reader = reader(json)
    #expect(throws: JSONReader.Failure.self) {
      try reader.readObject { reader, _ in try reader.skipValue() }
      try reader.finish()
    }
  }
}
