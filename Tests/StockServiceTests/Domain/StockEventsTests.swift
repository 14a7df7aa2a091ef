import Foundation
import GrocerContracts
import GrocerCore
import Testing

@testable import StockService

@Suite struct StockEventsTests {
  @Test func stockChangedTravelsAsAnEnvelopeWithSubjectHubSlashSKU() throws {
    let product = Product(sku: "p1", name: "Club-Mate 0,5 l", price: eur(119), deposit: eur(25))
    let payload = StockChanged(hub: "h1", product: product, available: 7, reason: "damaged")
    let message = payload.message(
      id: "e1", occurredAt: date("2026-10-20T18:42:00Z"), correlationId: "r1", version: 12)
    #expect(message.routingKey == "stock.changed")
    #expect(message.messageID == "e1")
    let envelope = try JSON.decode(EventEnvelope.self, from: message.body)
    #expect(envelope.type == "stock.changed")
    #expect(envelope.subject == "stock/h1/p1")
    #expect(envelope.sequence == 12)
    #expect(envelope.source == "stock-service")
    #expect(envelope.correlationId == "r1")
    #expect(try envelope.payload(as: StockChanged.self) == payload)
  }

  @Test(arguments: [
    StockChanged(
      hub: "h1", sku: "p1", name: "Club-Mate 0,5 l \"Original\" \\ ü", available: 0, price: eur(119),
      deposit: eur(25), unitPrice: UnitPrice(amount: eur(238), per: .litre), reason: "damaged"),
    StockChanged(hub: "h2", sku: "p2", name: "Äpfel", available: 1234, price: eur(0)),
    StockChanged(
      hub: "h3", sku: "p3", name: "x", available: -1, price: Money(minorUnits: 5, currency: "USD"),
      unitPrice: UnitPrice(amount: eur(1), per: .hundredGrams)),
  ])
  func stockChangedIsWrittenByHandAsTheEncoderWritesIt(payload: StockChanged) throws {
    #expect(
      String(decoding: payload.jsonBytes, as: UTF8.self)
        == String(decoding: try JSON.encode(payload), as: UTF8.self))
    let message = payload.message(id: "e", occurredAt: Date(), correlationId: nil, version: 1)
    #expect(try JSON.decode(EventEnvelope.self, from: message.body).payload(as: StockChanged.self) == payload)
  }

  @Test(arguments: [
    StockChanged(
      hub: "h1", sku: "p1", name: "Club-Mate \"Original\" \\ ü 😀", available: 0, price: eur(119),
      deposit: eur(25), unitPrice: UnitPrice(amount: eur(238), per: .litre), reason: "damaged"),
    StockChanged(hub: "h2", sku: "p2", name: "Äpfel", available: 1234, price: eur(0)),
  ])
  func stockChangedIsReadByHandAsTheDecoderReadsIt(payload: StockChanged) throws {
    let message = payload.message(
      id: "e1", occurredAt: date("2026-10-20T18:42:00Z"), correlationId: "r1", version: 9)
    let byHand = try TypedEventEnvelope<StockChanged>.decode(message.body, type: "stock.changed")
    let byDecoder = try JSON.decode(TypedEventEnvelope<StockChanged>.self, from: message.body)
    var reader = JSONReader(payload.jsonBytes)
    #expect(try StockChanged(reading: &reader) == payload)
    #expect(byHand.payload == payload)
    #expect(byHand.payload == byDecoder.payload)
    #expect(byHand.id == "e1" && byHand.sequence == 9 && byHand.correlationId == "r1")
    #expect(byHand.subject == "stock/h1/p1" || byHand.subject == "stock/h2/p2")
    #expect(byHand.occurredAt == byDecoder.occurredAt)
  }

  @Test func whatTheReaderRefusesGetsTheDecodersOwnError() throws {
    // No `sku`: the hand reader refuses, and the caller sees JSONDecoder's error.
    let body = Data(
      #"{"data":{"available":1,"hub":"h1","name":"x","price":{"currency":"EUR","minorUnits":1}},"id":"e","occurredAt":"2026-10-20T18:42:00Z","sequence":1,"source":"stock-service","subject":"h1/p1","type":"stock.changed"}"#
        .utf8)
    #expect(throws: DecodingError.self) {
      try TypedEventEnvelope<StockChanged>.decode(body, type: "stock.changed")
    }
    // Another type than the routing key's is refused either way.
    let good = StockChanged(hub: "h1", sku: "p1", name: "x", available: 1, price: eur(1))
      .message(id: "e", occurredAt: Date(), correlationId: nil, version: 1).body
    #expect(throws: DecodingError.self) {
      try TypedEventEnvelope<StockChanged>.decode(good, type: "hub.changed")
    }
  }

  @Test func orderOutcomesAreReadByHandIgnoringTheRestOfThePayload() throws {
    let body = Data(
      #"{"correlationId":null,"data":{"cartVersion":3,"hub":"h1","lines":[{"sku":"p1"}],"orderId":"o1","totals":{},"userId":"u1"},"id":"e","occurredAt":"2026-10-20T18:42:00Z","sequence":1,"source":"order-service","subject":"o1","type":"order.confirmed"}"#
        .utf8)
    let envelope = try TypedEventEnvelope<OrderOutcome>.decode(body, type: "order.confirmed")
    #expect(envelope.payload == OrderOutcome(orderId: "o1", hub: "h1", userId: "u1"))
    #expect(envelope.correlationId == nil)
    #expect(try JSON.decode(TypedEventEnvelope<OrderOutcome>.self, from: body).payload == envelope.payload)
  }

  @Test func aConfirmedOrdersLinesAreReadForBuyAgain() throws {
    let body = Data(
      #"{"data":{"hub":"h1","lines":[{"deposit":null,"name":"Milch","quantity":2,"sku":"p1"},{"quantity":1,"sku":"p2"}],"orderId":"o1","userId":"u1"},"id":"e","occurredAt":"2026-10-20T18:42:00Z","sequence":1,"source":"order-service","subject":"o1","type":"order.confirmed"}"#
        .utf8)
    let expected = OrderOutcome(
      orderId: "o1", hub: "h1", userId: "u1",
      lines: [.init(sku: "p1", quantity: 2), .init(sku: "p2", quantity: 1)])
    #expect(try TypedEventEnvelope<OrderOutcome>.decode(body, type: "order.confirmed").payload == expected)
    #expect(try JSON.decode(TypedEventEnvelope<OrderOutcome>.self, from: body).payload == expected)
  }

  @Test func reservationRepliesAndRequestsAreReadByHandAsTheDecoderReadsThem() throws {
    for reply in [
      ReservationReply.reserved(orderId: "o1", expiresAt: date("2026-10-20T18:52:00Z")),
      ReservationReply.shortfall(orderId: "o2", [.init(sku: "p1", requested: 3, available: 1)]),
      ReservationReply(
        orderId: "o3", status: .rejected, error: RemoteError(code: "unknownHub", detail: "no \"h9\"")),
    ] {
      let data = try JSON.encode(reply)
      var reader = JSONReader(data)
      #expect(try ReservationReply(reading: &reader) == reply)
      #expect(try JSON.read(ReservationReply.self, from: data) == reply)
    }
    let request = ReservationRequest(
      orderId: "o1", hub: "h1", lines: [ReservationLine(sku: "p1", quantity: 2)], correlationId: "r")
    var reader = JSONReader(request.jsonBytes)
    #expect(try ReservationRequest(reading: &reader) == request)
    // What the reader refuses, the decoder judges: an unknown status is its error.
    let odd = Data(#"{"orderId":"o","status":"maybe"}"#.utf8)
    #expect(throws: DecodingError.self) { try JSON.read(ReservationReply.self, from: odd) }
  }

  @Test func theHandWrittenReservationReplyAndLinesAreTheEncodersBytes() throws {
    for reply in [
      ReservationReply.reserved(orderId: "o1", expiresAt: date("2026-10-20T18:52:00Z")),
      ReservationReply.reserved(orderId: "o1b", expiresAt: Date(timeIntervalSince1970: 1_792_000_000.25)),
      ReservationReply.shortfall(
        orderId: "o2",
        [.init(sku: "p1", requested: 3, available: 1), .init(sku: "p\\2", requested: 9, available: 0)]),
      ReservationReply.shortfall(orderId: "o2b", []),
      ReservationReply(
        orderId: "o3", status: .rejected, error: RemoteError(code: "unknownHub", detail: "no \"h9\"\n")),
    ] {
      #expect(
        String(decoding: reply.jsonBytes, as: UTF8.self)
          == String(decoding: try JSON.encode(reply), as: UTF8.self))
    }
    for lines in [[], [ReservationLine(sku: "p1", quantity: 2), ReservationLine(sku: "ü\"3", quantity: 99)]] {
      #expect(
        String(decoding: ReservationLine.jsonBytes(lines), as: UTF8.self)
          == String(decoding: try JSON.encode(lines), as: UTF8.self))
    }
  }

  @Test func invalidationReadsAnEnvelopesHeadByHandAsTheDecoderDoes() throws {
    let product = Product(sku: "p/1", name: "Hafer \"Drink\"", price: eur(199))
    let message = StockChanged(hub: "h1", product: product, available: 3, reason: "reservation").message(
      id: "e1", occurredAt: date("2026-10-20T18:42:00Z"), correlationId: nil, version: 41)
    var reader = JSONReader(message.body)
    let head = try CacheInvalidationHandler.Head(reading: &reader)
    #expect(head.type == "stock.changed" && head.subject == "stock/h1/p/1" && head.sequence == 41)
    let decoded = try JSONDecoder().decode(CacheInvalidationHandler.Head.self, from: message.body)
    #expect(decoded.type == head.type && decoded.subject == head.subject && decoded.sequence == head.sequence)
    var partial = JSONReader(Data(#"{"type":"stock.changed","subject":"h1/p1"}"#.utf8))
    #expect(throws: JSONReader.Failure.self) { try CacheInvalidationHandler.Head(reading: &partial) }
  }

  @Test func theHandWrittenReservationRequestIsTheEncodersBytes() throws {
    for request in [
      ReservationRequest(
        orderId: "ord_1", hub: "h1",
        lines: [ReservationLine(sku: "p1", quantity: 2), ReservationLine(sku: "p\"2", quantity: 1)],
        correlationId: "r-1"),
      ReservationRequest(orderId: "ord_2", hub: "h2", lines: [], correlationId: nil),
    ] {
      #expect(
        String(decoding: request.jsonBytes, as: UTF8.self)
          == String(decoding: try JSON.encode(request), as: UTF8.self))
    }
  }

  @Test func hubChangedCarriesTheWholeHub() throws {
    let hub = Hub(
      id: "h2", name: "Kreuzberg", hours: .daily(opens: LocalTime("07:00")!, closes: LocalTime("23:00")!),
      pricing: PricingSettings(minimumOrder: eur(1000), deliveryFee: eur(199), freeDeliveryFrom: eur(3500)),
      currency: "EUR")
    let message = try HubChanged(hub: hub).message(
      id: "e2", occurredAt: Date(), correlationId: nil, version: 3)
    #expect(message.routingKey == StockEventType.hubChanged)
    let envelope = try JSON.decode(EventEnvelope.self, from: message.body)
    #expect(envelope.subject == "hub/h2")
    #expect(envelope.type == StockEventType.hubChanged)
    #expect(envelope.sequence == 3)
    #expect(try envelope.payload(as: HubChanged.self).value == hub)
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
