import Foundation
import GrocerContracts
import GrocerCore
import GrocerStorage
import Testing

@testable import OrderService

/// A reservation asked for by an earlier drive of the order is released when a later drive
/// gives up, even if the later ask never left (found by the fault suite: a disk-full error
/// lost the record of a reservation, the broker then restarted, and the goods stayed held).
@Suite struct ReservationRecoveryTests {
  private func outboxTypes(_ world: ReviewHarness) throws -> [String] {
    try world.store.database.read { try Outbox.pending(limit: 10, in: $0) }.map(\.message.routingKey)
  }

  @Test func aRedriveThatCannotReachStockReleasesWhatAnEarlierAskMayHold() async throws {
    let world = try ReviewHarness()
    let body = try PlaceOrderBody.decode(
      from: Data(ReviewHarness.body().utf8), mappingErrors: OrderError.init)
    guard
      case .started(let started) = try world.store.begin(
        user: "u1", key: "k-redrive", body: body, method: .card, correlationID: nil)
    else { throw Failure("the attempt did not start") }
    let orderId = started.orderId
    // An earlier drive priced the order and asked StockService; its answer was never recorded.
    try world.store.record(.priced(OrderHTTPTests.cart), of: orderId, reply: nil, event: nil)
    world.clients.stock.withLock { $0 = .fail(.notSent) }

    let outcome = await world.saga.drive(orderId)
    guard case .unavailable = outcome else { throw Failure("expected 503, got \(outcome)") }
    #expect(try outboxTypes(world) == [OrderEventType.cancelled])
    let event = try JSON.decode(
      EventEnvelope.self,
      from: try #require(world.store.database.read { try Outbox.pending(limit: 1, in: $0) }.first)
        .message.body)
    #expect(event.subject == EventSubject.order(orderId))
    #expect(try world.simulator.ledger().isEmpty)
  }

  @Test func aFirstAskThatNeverLeftReleasesNothing() async throws {
    let world = try ReviewHarness()
    world.clients.cart.withLock { $0 = .reply(CartCheckoutReply(cart: OrderHTTPTests.cart, matches: true)) }
    world.clients.stock.withLock { $0 = .fail(.notSent) }
    let response = await world.place()
    #expect(response.status == 503)
    #expect(try outboxTypes(world).isEmpty)
  }
}
