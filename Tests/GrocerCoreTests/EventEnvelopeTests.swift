import Foundation
import Testing

@testable import GrocerCore

@Suite struct EventEnvelopeTests {
  private struct StockChanged: Codable, Equatable, Sendable {
    var hub: String
    var sku: String
    var count: Int
    var changedAt: Date
  }

  private let occurredAt = Date(timeIntervalSince1970: 1_792_521_720)

  private func envelope(correlationId: String? = "req-1") throws -> EventEnvelope {
    try EventEnvelope(
      id: "evt-1", type: "stock.changed", occurredAt: occurredAt, source: "stock-service",
      correlationId: correlationId, subject: "stock/h1/p1", sequence: 7,
      payload: StockChanged(hub: "h1", sku: "p1", count: 12, changedAt: occurredAt.addingTimeInterval(-5)))
  }

  @Test(arguments: ["req-1", nil, "quote \" and \\ and \n"] as [String?])
  func theOnePassMessageIsTheSameEnvelope(correlationId: String?) throws {
    let expected = try envelope(correlationId: correlationId)
    let message = try EventEnvelope.message(
      id: "evt-1", type: "stock.changed", occurredAt: occurredAt, source: "stock-service",
      correlationId: correlationId, subject: "stock/h1/p1", sequence: 7,
      payload: StockChanged(hub: "h1", sku: "p1", count: 12, changedAt: occurredAt.addingTimeInterval(-5)))
    #expect(try JSON.decode(EventEnvelope.self, from: message.body) == expected)
    let reference = try expected.message()
    #expect(message.messageID == reference.messageID)
    #expect(message.routingKey == reference.routingKey)
    #expect(message.correlationID == reference.correlationID)
    #expect(message.timestamp == reference.timestamp)
    #expect(String(decoding: message.body, as: UTF8.self) == String(decoding: reference.body, as: UTF8.self))
  }

  @Test func carriesATypedPayloadBothWays() throws {
    let payload = try envelope().payload(as: StockChanged.self)
    #expect(
      payload == StockChanged(hub: "h1", sku: "p1", count: 12, changedAt: occurredAt.addingTimeInterval(-5)))
  }

  @Test(arguments: ["req-1", nil] as [String?])
  func readsTheTypedEnvelopeAsTheGenericOne(correlationId: String?) throws {
    let original = try envelope(correlationId: correlationId)
    let typed = try TypedEventEnvelope<StockChanged>.decode(original.message().body, type: "stock.changed")
    #expect(typed.id == original.id)
    #expect(typed.type == original.type)
    #expect(typed.occurredAt == original.occurredAt)
    #expect(typed.source == original.source)
    #expect(typed.correlationId == original.correlationId)
    #expect(typed.subject == original.subject)
    #expect(typed.sequence == original.sequence)
    #expect(try typed.payload == original.payload(as: StockChanged.self))
  }

  @Test func theTypedEnvelopeRefusesAnotherTypeOrAnotherPayload() throws {
    let body = try envelope().message().body
    #expect(throws: DecodingError.self) {
      try TypedEventEnvelope<StockChanged>.decode(body, type: "stock.reserved")
    }
    struct Other: Decodable, Sendable { var orderId: String }
    #expect(throws: DecodingError.self) { try TypedEventEnvelope<Other>.decode(body, type: "stock.changed") }
  }

  @Test func encodesEveryFieldWithRFC3339Times() throws {
    let json = try #require(
      JSONSerialization.jsonObject(with: JSON.encode(envelope())) as? [String: Any])
    #expect(
      Set(json.keys) == [
        "id", "type", "occurredAt", "source", "correlationId", "subject", "sequence", "data",
      ])
    #expect(json["occurredAt"] as? String == "2026-10-20T18:42:00Z")
    #expect(json["sequence"] as? Int == 7)
    #expect(json["subject"] as? String == "stock/h1/p1")
    let data = try #require(json["data"] as? [String: Any])
    #expect(data["changedAt"] as? String == "2026-10-20T18:41:55Z")
    #expect(data["count"] as? Int == 12)
  }

  @Test func decodesWhatItEncodes() throws {
    let original = try envelope()
    #expect(try JSON.decode(EventEnvelope.self, from: JSON.encode(original)) == original)
    let uncorrelated = try envelope(correlationId: nil)
    #expect(try JSON.decode(EventEnvelope.self, from: JSON.encode(uncorrelated)) == uncorrelated)
  }

  @Test func decodesTimesWithAnOffsetAndRefusesOthers() throws {
    let json = #"""
      {"id":"e","type":"t","occurredAt":"2026-10-20T20:42:00+02:00","source":"s","subject":"x","sequence":1,"data":{}}
      """#
    #expect(try JSON.decode(EventEnvelope.self, from: Data(json.utf8)).occurredAt == occurredAt)
    let bad = json.replacingOccurrences(of: "2026-10-20T20:42:00+02:00", with: "last tuesday")
    #expect(throws: DecodingError.self) { try JSON.decode(EventEnvelope.self, from: Data(bad.utf8)) }
  }

  @Test func travelsAsAMessageRoutedByType() throws {
    let original = try envelope()
    let message = try original.message()
    #expect(message.messageID == "evt-1")
    #expect(message.routingKey == "stock.changed")
    #expect(message.type == "stock.changed")
    #expect(message.exchange == EventTopology.exchange)
    #expect(message.timestamp == occurredAt)
    #expect(message.correlationID == "req-1")
    #expect(try JSON.decode(EventEnvelope.self, from: message.body) == original)
  }
}
