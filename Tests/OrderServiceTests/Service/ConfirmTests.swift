import Foundation
import GrocerContracts
import GrocerCore
import GrocerStorage
import Testing

@testable import OrderService

/// `OrderStore.confirm` with the order the saga already holds (it skips decoding the stored cart):
/// the event carries what was priced, and a second confirmation changes nothing.
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

  @Test func confirmingAgainWithTheOrderInHandAnswersTheFirstReplyAndPublishesNothingMore() async throws {
    let world = try ReviewHarness()
    world.neighboursAgree()
    let first = await world.place()
    let placed = try first.json(as: PlacedOrder.self)
    // The order as a second driver would have held it before the first one confirmed it.
    var stale = try #require(try world.store.order(placed.orderId))
    stale.step = .charging
    let again = try world.store.confirm(placed.orderId, paymentId: "p-other", known: stale)
    #expect(again.status == 201)
    #expect(String(decoding: again.body, as: UTF8.self) == first.bodyString)
    let pending = try world.store.database.read { try Outbox.backlog(in: $0) }
    #expect(pending == 1)
  }
}
