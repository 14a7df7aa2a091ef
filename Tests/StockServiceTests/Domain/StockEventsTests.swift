import Foundation
import GrocerContracts
import GrocerCore
import Testing

@testable import StockService

@Suite struct StockEventsTests {
  @Test func stockChangedTravelsAsAnEnvelopeWithSubjectHubSlashSKU() throws {
    let product = Product(sku: "p1", name: "Club-Mate 0,5 l", price: eur(119), deposit: eur(25))
    let payload = StockChanged(hub: "h1", product: product, available: 7, reason: "damaged")
    let envelope = try payload.envelope(
      id: "e1", occurredAt: date("2026-10-20T18:42:00Z"), correlationId: "r1", version: 12)
    #expect(envelope.type == "stock.changed")
    #expect(envelope.subject == "h1/p1")
    #expect(envelope.sequence == 12)
    #expect(envelope.source == "stock-service")
    let decoded = try JSON.decode(EventEnvelope.self, from: JSON.encode(envelope))
    #expect(try decoded.payload(as: StockChanged.self) == payload)
    #expect(try envelope.message().routingKey == "stock.changed")
  }

  @Test func hubChangedCarriesTheWholeHub() throws {
    let hub = Hub(
      id: "h2", name: "Kreuzberg", hours: .daily(opens: LocalTime("07:00")!, closes: LocalTime("23:00")!),
      pricing: PricingSettings(minimumOrder: eur(1000), deliveryFee: eur(199), freeDeliveryFrom: eur(3500)),
      currency: "EUR")
    let envelope = try HubChanged(hub: hub).envelope(
      id: "e2", occurredAt: Date(), correlationId: nil, version: 3)
    #expect(envelope.subject == "hub/h2")
    #expect(envelope.type == StockEventType.hubChanged)
    let decoded = try JSON.decode(EventEnvelope.self, from: JSON.encode(envelope))
    #expect(try decoded.payload(as: HubChanged.self).value == hub)
  }

  @Test(arguments: [
    ("order.confirmed", OrderOutcome.Kind.confirmed), ("order.declined", .declined),
    ("order.cancelled", .cancelled),
  ])
  func orderOutcomesDecodeIgnoringExtraFields(type: String, kind: OrderOutcome.Kind) throws {
    let data: JSONValue = .object([
      "orderId": .string("o1"), "hub": .string("h1"), "total": .object([:]), "reason": .string("x"),
    ])
    let envelope = EventEnvelope(
      id: "e", type: type, occurredAt: Date(), source: "order-service", correlationId: nil, subject: "o1",
      sequence: 2, data: data)
    // As OrderOutcomeHandler reads it: the routing key names the kind, the body decodes at once.
    #expect(OrderOutcome.Kind(rawValue: type) == kind)
    let decoded = try TypedEventEnvelope<OrderOutcome>.decode(try JSON.encode(envelope), type: type)
    #expect(decoded.payload == OrderOutcome(orderId: "o1", hub: "h1"))
  }

  @Test func otherEventsAreNotOutcomesAndBrokenOutcomesThrow() throws {
    #expect(OrderOutcome.Kind(rawValue: "stock.changed") == nil)
    let broken = EventEnvelope(
      id: "e", type: "order.confirmed", occurredAt: Date(), source: "s", correlationId: nil, subject: "o1",
      sequence: 1, data: .object(["hub": .string("h1")]))
    #expect(throws: (any Error).self) {
      try TypedEventEnvelope<OrderOutcome>.decode(try JSON.encode(broken), type: "order.confirmed")
    }
    var withoutHub = broken
    withoutHub.data = .object(["orderId": .string("o1")])
    let decoded = try TypedEventEnvelope<OrderOutcome>.decode(
      try JSON.encode(withoutHub), type: "order.confirmed")
    #expect(decoded.payload == OrderOutcome(orderId: "o1", hub: nil))
  }
}
