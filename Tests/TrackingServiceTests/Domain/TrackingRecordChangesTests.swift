import Foundation
import GrocerContracts
import GrocerCore
import Testing

@testable import TrackingService

/// The rules of each change to an order's tracking, without a database.
@Suite struct TrackingRecordChangesTests {
  static let now = Date(timeIntervalSince1970: 1_790_000_000)
  static let ana = AssignedRider(id: "r7", firstName: "Ana")
  static let bo = AssignedRider(id: "r8", firstName: "Bo")
  static let home = GeoPoint(lat: 52.53, lng: 13.41)

  static func order(placedAt: Date = now) -> OrderConfirmed {
    OrderConfirmed(
      orderId: "o1", userId: "u1", hub: "h1", cartVersion: 1, lines: [], totals: .zero("EUR"),
      deliverTo: home, paymentId: "pay-o1", placedAt: placedAt)
  }

  static func started() -> TrackingRecord { .started(order(), at: now, eta: ETAModel()) }

  @Test func trackingStartsPlacedAtVersionOneWithAnETA() {
    let record = Self.started()
    #expect(record.state == .placed)
    #expect(record.version == 1)
    #expect(record.generatedAt == Self.now)
    #expect(record.stageSince == Self.now)
    #expect(record.destination == Self.home)
    #expect(record.eta != nil)
    #expect(record.eta == ETAModel().estimate(record, now: Self.now))
    #expect(TrackingRecord.startChanges == [.stage, .eta])
  }

  @Test func anOrderPlacedInTheFutureStartsNow() {
    let record = TrackingRecord.started(Self.order(placedAt: Self.now + 600), at: Self.now, eta: ETAModel())
    #expect(record.placedAt == Self.now)
    #expect(record.stageSince == Self.now)
  }

  @Test func aNewStageRestartsItsClockAndAFinalOneFinishesTheOrder() throws {
    let later = Self.now + 120
    let picking = try #require(try Self.started().moved(by: .picking, at: later))
    #expect(picking.state.status == .picking)
    #expect(picking.stageSince == later)
    #expect(picking.finishedAt == nil)
    let cancelled = try #require(try picking.moved(by: .cancelled(reason: "closed"), at: later + 60))
    #expect(cancelled.finishedAt == later + 60)
    #expect(cancelled.stageSince == later + 60)
  }

  @Test func aProblemKeepsTheStageClock() throws {
    let picking = try #require(try Self.started().moved(by: .picking, at: Self.now + 60))
    let problem = try #require(try picking.moved(by: .problem(message: "late"), at: Self.now + 300))
    #expect(problem.stageSince == Self.now + 60)
  }

  @Test func anotherRiderDropsTheFixHeld() throws {
    var record = try #require(try Self.started().moved(by: .picking, at: Self.now))
    record = try #require(try record.moved(by: .onTheWay(rider: Self.ana), at: Self.now))
    record = try #require(try record.withFix(lat: 52.52, lng: 13.40, recordedAt: Self.now + 10))
    #expect(record.riderView != nil)
    let arriving = try #require(try record.moved(by: .arriving, at: Self.now + 20))
    #expect(arriving.fix != nil, "the same rider keeps the fix")
    let back = try #require(try record.moved(by: .picking, at: Self.now + 20))
    #expect(back.fix == nil)
  }

  @Test func aRepeatedMoveChangesNothingAndAnIllegalOneIsRefused() throws {
    let picking = try #require(try Self.started().moved(by: .picking, at: Self.now))
    #expect(try picking.moved(by: .picking, at: Self.now + 5) == nil)
    #expect(throws: TrackingError.self) { try picking.moved(by: .delivered, at: Self.now) }
  }

  @Test func onlyANewerFixIsTakenAndNotOnceTheOrderFinished() throws {
    let record = Self.started()
    let fixed = try #require(try record.withFix(lat: 52.5, lng: 13.4, recordedAt: Self.now))
    #expect(try fixed.withFix(lat: 52.6, lng: 13.5, recordedAt: Self.now) == nil, "same time")
    #expect(try fixed.withFix(lat: 52.6, lng: 13.5, recordedAt: Self.now - 1) == nil, "older")
    #expect(try fixed.withFix(lat: 52.6, lng: 13.5, recordedAt: Self.now + 1)?.fix?.lat == 52.6)
    // A minute's grace before the order was placed; earlier is refused.
    #expect(try record.withFix(lat: 52.5, lng: 13.4, recordedAt: Self.now - 60) != nil)
    #expect(throws: TrackingError(.invalid, "fixTooOld", "`recordedAt` is before the order was placed")) {
      try record.withFix(lat: 52.5, lng: 13.4, recordedAt: Self.now - 61)
    }
    let cancelled = try #require(try record.moved(by: .cancelled(reason: "x"), at: Self.now))
    #expect(throws: TrackingError(.conflict, "orderFinished", "the order is cancelled")) {
      try cancelled.withFix(lat: 52.5, lng: 13.4, recordedAt: Self.now + 1)
    }
  }

  @Test func aRevisionRaisesTheVersionOnceAndNamesWhatMoved() throws {
    let current = Self.started()
    let later = Self.now + 30
    let picking = try current.moved(by: .picking, at: later)
    guard
      case .changed(let next, let changed) = TrackingRevision.revise(
        current, to: picking, at: later, eta: ETAModel())
    else {
      Issue.record("picking was not a change")
      return
    }
    #expect(next.version == 2)
    #expect(next.generatedAt == later)
    #expect(next.eta == ETAModel().estimate(next, now: later))
    #expect(changed.first == .stage)
    #expect(!changed.contains(.rider))
  }

  @Test func generatedAtRisesInWholeSecondsEvenForVersionsBuiltWithinOneSecond() throws {
    // Started 0.4 s into a second: stamped with that second.
    let start = Self.now + 0.4
    var record = TrackingRecord.started(Self.order(placedAt: start), at: start, eta: ETAModel())
    #expect(record.generatedAt == Self.now)
    // Three changes within the next 0.3 s: each a second after the one before.
    var stamps: [Date] = []
    for (command, offset) in [(TrackingCommand.picking, 0.5), (.onTheWay(rider: Self.ana), 0.6)] {
      let moved = try record.moved(by: command, at: Self.now + offset)
      guard
        case .changed(let next, _) = TrackingRevision.revise(
          record, to: moved, at: Self.now + offset, eta: ETAModel())
      else {
        Issue.record("\(command) was not a change")
        return
      }
      record = next
      stamps.append(next.generatedAt)
    }
    #expect(stamps == [Self.now + 1, Self.now + 2])
    // Once the clock passes them, the clock's own second again.
    #expect(TrackingRevision.stamp(after: Self.now + 2, at: Self.now + 7.9) == Self.now + 7)
    #expect(TrackingRevision.stamp(after: Self.now + 7.5, at: Self.now + 7.9) == Self.now + 8)
  }

  @Test func aRevisionWithNothingVisibleMovedIsUnchanged() {
    let current = Self.started()
    #expect(TrackingRevision.revise(current, to: nil, at: Self.now, eta: ETAModel()) == .unchanged(current))
    // The same record at the same moment: the ETA is the same, so nothing moved.
    #expect(
      TrackingRevision.revise(current, to: current, at: Self.now, eta: ETAModel()) == .unchanged(current))
  }

  @Test func aLateRecordGetsAMovedRangeAsItsOnlyChange() throws {
    let current = Self.started()
    let late = Self.now + 3600
    guard
      case .changed(let next, let changed) = TrackingRevision.revise(
        current, to: current, at: late, eta: ETAModel())
    else {
      Issue.record("a late ETA did not move")
      return
    }
    #expect(changed == [.eta])
    #expect(try #require(next.eta).earliest >= late)
  }

  @Test func aFinishedOrderHasNoETA() throws {
    let delivered = try #require(try Self.started().moved(by: .cancelled(reason: "x"), at: Self.now))
    #expect(ETAModel().estimate(delivered, now: Self.now) == nil)
  }

  @Test func theUpdateCarriesTheSnapshotAndThePreviousStatus() {
    let record = Self.started()
    let update = record.update(changed: [.eta], previous: .picking)
    #expect(update.snapshot == record.snapshot)
    #expect(update.changed == [.eta])
    #expect(update.previousStatus == .picking)
    #expect(update.userId == "u1")
    #expect(update.hub == "h1")
  }

  @Test func theSameLiveActivityTokenIsNotTakenTwice() {
    var record = Self.started()
    #expect(record.takesLiveActivityToken("ab"))
    record.liveActivityToken = "ab"
    #expect(!record.takesLiveActivityToken("ab"))
    #expect(record.takesLiveActivityToken("cd"))
  }
}
