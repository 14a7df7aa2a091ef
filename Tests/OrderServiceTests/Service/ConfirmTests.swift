import Foundation
import GrocerContracts
import GrocerCore
import GrocerStorage
import Testing

@testable import OrderService

/// Confirming with the order the saga already holds (`OrderStore.record(.confirmed…)`, no
/// decoding of the stored cart): the event carries what was priced, and a second confirmation
/// changes nothing.
@Suite struct ConfirmTests {
  @Test func theConfirmedEventCarriesThePricedCartFromTheOrderInHand() async throws {
    let world = try ReviewHarness()
    world.neighboursAgree()
    let placed = try await world.place().json(as: PlacedOrder.self)
    #expect(placed.status == "confirmed")
    let messages = try world.store.database.read { try Outbox.pending(limit: 10, in: $0) }
    #expect(messages.map(\.message.routingKey) == [OrderEventType.confirmed])
    let event = try JSON.decode(EventEnvelope.self, from: try #require(messages.first).message.body)
    let payload = try event.payload(as: OrderConfirmed.self)
    #expect(payload.orderId == placed.orderId)
    #expect(payload.userId == "u1")
    #expect(payload.lines.map(\.sku) == OrderHTTPTests.cart.lines.map(\.sku))
    #expect(payload.totals == OrderHTTPTests.cart.totals)
  }

  @Test(arguments: [GeoPoint(lat: 52.520008, lng: 13.404954), nil] as [GeoPoint?])
  func theHandWrittenEventIsTheEncodersBytes(deliverTo: GeoPoint?) throws {
    let eur = { (units: Int) in Money(minorUnits: units, currency: "EUR") }
    let payload = OrderConfirmed(
      orderId: "ord_1", userId: "u \"1\"", hub: "h1", cartVersion: 42,
      lines: [
        OrderLine(
          sku: "p1", name: "Milch 1 l / ü", quantity: 2, unitPrice: eur(129), deposit: eur(25),
          lineTotal: eur(258)),
        OrderLine(
          sku: "p2", name: "Brot", quantity: 1, unitPrice: eur(249), deposit: nil, lineTotal: eur(249)),
      ],
      totals: OrderHTTPTests.cart.totals, deliverTo: deliverTo, paymentId: "pay_1",
      placedAt: Date(timeIntervalSince1970: 1_796_115_000.25))
    #expect(
      String(decoding: payload.jsonBytes, as: UTF8.self)
        == String(decoding: try JSON.encode(payload), as: UTF8.self))
  }

  @Test func theConfirmedReplyIsTheOrderIdStatusAndTotal() throws {
    let reply = OrderReply.confirmed(orderId: "ord_\"x", total: Money(minorUnits: 1234, currency: "EUR"))
    #expect(reply.status == 201)
    #expect(reply.contentType == "application/json")
    let expected: JSONValue = .object([
      "orderId": .string("ord_\"x"), "status": .string("confirmed"),
      "total": .object(["currency": .string("EUR"), "minorUnits": .number(1234)]),
    ])
    #expect(
      String(decoding: reply.body, as: UTF8.self)
        == String(decoding: try JSON.encode(expected), as: UTF8.self))
  }

  @Test func confirmingAgainWithTheOrderInHandAnswersTheFirstReplyAndPublishesNothingMore() async throws {
    let world = try ReviewHarness()
    world.neighboursAgree()
    let first = await world.place()
    let placed = try first.json(as: PlacedOrder.self)
    // The order as a second driver would have held it before the first one confirmed it.
    var stale = try #require(try world.store.order(placed.orderId))
    stale.step = .charging
    let cart = try #require(stale.cart)
    let again = try #require(
      try world.store.record(
        .confirmed(paymentId: "p-other"), of: placed.orderId,
        reply: OrderReply(.confirmed(orderId: placed.orderId, total: cart.totals.total)),
        event: OrderEvents.confirmed(stale, cart: cart, paymentId: "p-other", id: "evt-again", at: Date())))
    #expect(again.status == 201)
    #expect(String(decoding: again.body, as: UTF8.self) == first.bodyString)
    let pending = try world.store.database.read { try Outbox.backlog(in: $0) }
    #expect(pending == 1)
  }
}
