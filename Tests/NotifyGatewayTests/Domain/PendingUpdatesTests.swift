import Foundation
import GrocerContracts
import Testing

@testable import NotifyGateway

/// What the gateway keeps of the events it consumes, without a database.
@Suite struct PendingUpdatesTests {
  static func update(_ status: TrackingStatus, changed: [TrackingChange] = [.stage]) -> TrackingUpdated {
    TrackingUpdated(
      userId: "u1", hub: "h1",
      snapshot: TrackingSnapshot(
        orderId: "o1", version: 3, status: status, problem: nil, eta: nil, rider: nil, destination: nil,
        generatedAt: Date(timeIntervalSince1970: 1_790_000_000)),
      changed: changed, previousStatus: .arriving)
  }

  @Test func anUpdateNoNewerThanWhatWasHandledIsStale() {
    #expect(PendingUpdates.isHandled(version: 3, handled: 3))
    #expect(PendingUpdates.isHandled(version: 3, handled: 4))
    #expect(!PendingUpdates.isHandled(version: 3, handled: 2))
    #expect(!PendingUpdates.isHandled(version: 3, handled: nil))
  }

  @Test func onlyTheNewestUpdateWaits() {
    #expect(PendingUpdates.queue(version: 3, pending: nil) == .queued)
    #expect(PendingUpdates.queue(version: 3, pending: 2) == .coalesced)
    #expect(PendingUpdates.queue(version: 3, pending: 3) == .stale)
    #expect(PendingUpdates.queue(version: 3, pending: 4) == .stale)
  }

  @Test func onlyTheUpdateThatFinishesAnOrderRefreshesTheDevices() {
    #expect(PendingUpdates.refreshesDevices(Self.update(.delivered)))
    #expect(PendingUpdates.refreshesDevices(Self.update(.cancelled)))
    #expect(!PendingUpdates.refreshesDevices(Self.update(.arriving)))
    #expect(!PendingUpdates.refreshesDevices(Self.update(.problem)))
    // Not the stage: a late rider fix of a delivered order.
    #expect(!PendingUpdates.refreshesDevices(Self.update(.delivered, changed: [.rider])))
    // Already final before (a cancel after delivery would be refused upstream; never twice here).
    var again = Self.update(.cancelled)
    again.previousStatus = .delivered
    #expect(!PendingUpdates.refreshesDevices(again))
  }

  @Test func aDeliveredOrderWithoutALiveActivityGetsAnAlert() {
    #expect(PendingUpdates.alertInstead(of: Self.update(.delivered), hasActivity: false) == .delivered)
    #expect(PendingUpdates.alertInstead(of: Self.update(.delivered), hasActivity: true) == nil)
    #expect(
      PendingUpdates.alertInstead(of: Self.update(.delivered, changed: [.eta]), hasActivity: false) == nil)
    #expect(PendingUpdates.alertInstead(of: Self.update(.arriving), hasActivity: false) == nil)
  }

  /// After an activity ended near its eight hours, every stage change goes to the devices.
  @Test func afterTheActivityEndedAtItsLimitTheNewsGoesOnAsAlerts() {
    func alert(_ status: TrackingStatus, changed: [TrackingChange] = [.stage]) -> AlertText? {
      PendingUpdates.alertInstead(
        of: Self.update(status, changed: changed), hasActivity: true, activityEnded: true)
    }
    #expect(alert(.onTheWay) == AlertText(title: "On its way", body: "Your rider is bringing your order."))
    #expect(alert(.arriving)?.title == "Almost there")
    #expect(alert(.delivered) == .delivered)
    #expect(alert(.problem)?.title == "A problem with your order")
    #expect(alert(.onTheWay, changed: [.eta]) == nil, "only stage changes")
    #expect(
      PendingUpdates.alertInstead(of: Self.update(.onTheWay), hasActivity: true, activityEnded: false) == nil,
      "a running card shows it")
  }

  @Test func aTokenEventStartsReplacesRenumbersOrIsIgnored() {
    #expect(PendingUpdates.tokenChange(token: "a", sequence: 1, current: nil) == .start)
    #expect(PendingUpdates.tokenChange(token: "b", sequence: 2, current: ("a", 1)) == .replace)
    #expect(
      PendingUpdates.tokenChange(token: "b", sequence: 2, current: (nil, 1)) == .replace, "a token forgotten")
    #expect(PendingUpdates.tokenChange(token: "a", sequence: 2, current: ("a", 1)) == .renumber)
    #expect(PendingUpdates.tokenChange(token: "b", sequence: 1, current: ("a", 2)) == .ignore)
    #expect(PendingUpdates.tokenChange(token: "a", sequence: 1, current: ("a", 1)) == .ignore)
    #expect(PendingUpdates.TokenChange.start.makesPendingDue)
    #expect(PendingUpdates.TokenChange.replace.makesPendingDue)
    #expect(PendingUpdates.TokenChange.renumber.makesPendingDue)
    #expect(!PendingUpdates.TokenChange.ignore.makesPendingDue)
  }

  @Test func theAlertTextsOfAnOrder() {
    #expect(
      AlertText.orderConfirmed == AlertText(title: "Order confirmed", body: "We're packing your order."))
    #expect(
      AlertText.paymentDeclined(nil)
        == AlertText(title: "Payment declined", body: "Your payment did not go through."))
    #expect(AlertText.paymentDeclined("Card expired").body == "Card expired")
    #expect(AlertText.stage(Self.update(.delivered).snapshot) == .delivered)
    #expect(AlertText.stage(Self.update(.onTheWay).snapshot) == nil)
    #expect(
      AlertText.stage(Self.update(.arriving).snapshot)?.body == "Your rider is arriving with your order.")
  }
}
