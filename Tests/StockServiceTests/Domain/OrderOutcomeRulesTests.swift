import GrocerContracts
import Testing

@testable import StockService

private func status(_ state: Reservation.State, _ releaseReason: String? = nil) -> ReservationStatus {
  ReservationStatus(hub: "h1", state: state, releaseReason: releaseReason)
}

/// Each order outcome against each state a reservation can be stored in.
@Suite struct OrderOutcomeRulesTests {
  typealias Decision = OrderOutcomeRules.Decision

  @Test(
    arguments: [
      (.confirmed, nil, .nothing(.unknownOrder)),
      (.declined, nil, .markReleased),
      (.cancelled, nil, .markReleased),
      (.confirmed, status(.held), .finish(.committed, reason: "orderConfirmed")),
      (.declined, status(.held), .finish(.released, reason: "orderDeclined")),
      (.cancelled, status(.held), .finish(.released, reason: "orderCancelled")),
      (.confirmed, status(.committed), .nothing(.nothingToDo)),
      (.cancelled, status(.committed), .nothing(.nothingToDo)),
      (.confirmed, status(.released, ReleaseReason.expired), .takeAfterExpiry),
      (.declined, status(.released, ReleaseReason.expired), .nothing(.nothingToDo)),
      (.confirmed, status(.released, "orderDeclined"), .nothing(.nothingToDo)),
      (.confirmed, status(.released, ReleaseReason.outcomeFirst), .nothing(.nothingToDo)),
      (.cancelled, status(.released, ReleaseReason.outcomeFirst), .nothing(.nothingToDo)),
    ] as [(OrderOutcome.Kind, ReservationStatus?, Decision)])
  func eachOutcomeMeetsEachState(kind: OrderOutcome.Kind, stored: ReservationStatus?, expected: Decision) {
    #expect(OrderOutcomeRules.decide(kind, reservation: stored) == expected)
  }

  @Test func eachDecisionReportsItsEffect() {
    #expect(OrderOutcomeRules.effect(of: .nothing(.nothingToDo)) == .nothingToDo)
    #expect(OrderOutcomeRules.effect(of: .nothing(.unknownOrder)) == .unknownOrder)
    #expect(OrderOutcomeRules.effect(of: .markReleased) == .unknownOrder)
    #expect(OrderOutcomeRules.effect(of: .finish(.released, reason: "orderDeclined")) == .applied)
    #expect(OrderOutcomeRules.effect(of: .takeAfterExpiry) == .confirmedAfterExpiry)
  }

  @Test func aRequestAfterItsOrdersDeclineIsRefusedAndAnyOtherIsDecided() {
    let request = ReservationRequest(
      orderId: "o1", hub: "h1", lines: [ReservationLine(sku: "p1", quantity: 1)])
    let late = ReservationRules.lateRequestReply(request, releaseReason: ReleaseReason.outcomeFirst)
    #expect(late?.status == .rejected)
    #expect(late?.error?.code == "reservationReleased")
    #expect(ReservationRules.lateRequestReply(request, releaseReason: nil) == nil)
    #expect(ReservationRules.lateRequestReply(request, releaseReason: ReleaseReason.expired) == nil)
  }
}
