import Foundation
import Testing

@testable import GrocerCore

@Suite struct JSONValueTests {
  private let sample: JSONValue = .object([
    "null": .null, "yes": .bool(true), "no": .bool(false), "int": .number(42), "negative": .number(-7),
    "fraction": .number(1.25), "big": .number(1e20), "text": .string("a \"quoted\" é 😀"),
    "list": .array([.number(1), .string("two"), .array([]), .object([:])]),
    "nested": .object(["deeper": .object(["x": .bool(true)])]),
  ])

  @Test func roundTripsThroughJSON() throws {
    #expect(try JSON.decode(JSONValue.self, from: JSON.encode(sample)) == sample)
  }

  @Test func writesWholeNumbersWithoutAFraction() throws {
    let json = try JSON.encode(JSONValue.array([.number(3), .number(-0), .number(2.5), .bool(true)]))
    #expect(String(decoding: json, as: UTF8.self) == "[3,0,2.5,true]")
  }

  @Test func keepsBooleansAndNumbersApart() throws {
    let decoded = try JSON.decode(JSONValue.self, from: Data("[true, 1, 0, false, \"1\"]".utf8))
    #expect(decoded == .array([.bool(true), .number(1), .number(0), .bool(false), .string("1")]))
  }

  @Test func subscriptsObjectsOnly() {
    #expect(sample["int"] == .number(42))
    #expect(sample["nested"]?["deeper"]?["x"] == .bool(true))
    #expect(sample["missing"] == nil)
    #expect(JSONValue.array([]).self["x"] == nil)
  }

  private struct Item: Codable, Equatable {
    var sku: String
    var count: Int
    var price: Money
    var at: Date
    var note: String?
  }

  @Test func convertsTypedValuesBothWays() throws {
    let item = Item(
      sku: "p1", count: 3, price: Money(minorUnits: 129), at: Date(timeIntervalSince1970: 1_792_521_720),
      note: nil)
    let value = try JSONValue(encoding: item)
    #expect(value["at"] == .string("2026-10-20T18:42:00Z"))
    #expect(value["price"] == .object(["minorUnits": .number(129), "currency": .string("EUR")]))
    #expect(value["note"] == nil)
    #expect(try value.decode(as: Item.self) == item)
  }
}
