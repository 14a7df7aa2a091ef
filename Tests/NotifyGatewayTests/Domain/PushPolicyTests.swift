import Foundation
import GrocerContracts
import Testing

@testable import NotifyGateway

/// The push rules, with the clock injected.
@Suite struct PushPolicyTests {
  let start = Date(timeIntervalSince1970: 1_790_000_000)
  let policy = PushPolicy(hourlyBudget: 3)

  func snapshot(
    _ version: Int64, _ status: TrackingStatus, eta: (Double, Double)? = (600, 900), rider: String? = nil,
    lat: Double = 52.5
  ) -> TrackingSnapshot {
    TrackingSnapshot(
      orderId: "o1", version: version, status: status, problem: nil,
      eta: eta.map { ETARange(earliest: start + $0.0, latest: start + $0.1) },
      rider: rider.map { RiderView(firstName: $0, lat: lat, lng: 13.4, recordedAt: start) },
      destination: GeoPoint(lat: 52.53, lng: 13.41), generatedAt: start + Double(version))
  }

  func run(_ snapshots: [TrackingSnapshot], budget: Int = 12, now: Date? = nil) -> [PushPolicy.Decision] {
    var state = ActivityState(startedAt: start)
    let policy = PushPolicy(hourlyBudget: budget)
    return snapshots.map { snapshot in
      let (decision, next) = policy.decide(snapshot, state: state, now: now ?? start + 60)
      state = next
      return decision
    }
  }

  func shape(_ decision: PushPolicy.Decision) -> String {
    switch decision {
    case .skip(let why): "skip \(why.rawValue)"
    case .send(let push):
      "p\(push.priority) \(push.event.rawValue)\(push.alert != nil ? " alert" : "")\(push.downgraded ? " downgraded" : "")"
    }
  }

  @Test func stagesAtTenEtaDriftAtFiveRiderMovesNothingEndThenNothing() {
    let decisions = run([
      snapshot(1, .placed),
      snapshot(2, .picking),
      snapshot(3, .picking, eta: (659, 959)),  // 59 s: not worth a push
      snapshot(4, .picking, eta: (660, 960)),  // 60 s from what the card shows: priority 5
      snapshot(5, .onTheWay, eta: (660, 960), rider: "Ana"),
      snapshot(6, .onTheWay, eta: (660, 960), rider: "Ana", lat: 52.51),  // the rider moved
      snapshot(7, .arriving, eta: (660, 960), rider: "Ana"),
      snapshot(8, .delivered, eta: nil, rider: "Ana"),
      snapshot(9, .delivered, eta: nil, rider: "Ana"),
    ])
    #expect(
      decisions.map(shape) == [
        "p10 update", "p10 update", "skip noVisibleChange", "p5 update", "p10 update", "skip noVisibleChange",
        "p10 update alert", "p10 end alert", "skip ended",
      ])
  }

  @Test func everyPushIsStampedWithItsSnapshotsGeneratedAtExactly() {
    // Three versions TrackingService built within one second, stamped a second apart by it.
    var snapshots = [
      snapshot(1, .picking), snapshot(2, .onTheWay, eta: (300, 600)), snapshot(3, .delivered, eta: nil),
    ]
    for index in snapshots.indices { snapshots[index].generatedAt = start + 10 + Double(index) }
    let stamps = run(snapshots).compactMap { decision -> Int? in
      guard case .send(let push) = decision else { return nil }
      return push.timestamp
    }
    let first = Int(start.timeIntervalSince1970) + 10
    #expect(stamps == [first, first + 1, first + 2])
    // Never moved past it, whatever was pushed before: the app stamps its own update with it.
    var state = ActivityState(startedAt: start)
    state.lastTimestamp = first + 50
    let (decision, next) = policy.decide(snapshot(40, .arriving), state: state, now: start + 60)
    guard case .send(let push) = decision else {
      Issue.record("expected a push, got \(decision)")
      return
    }
    #expect(push.timestamp == Int(start.timeIntervalSince1970) + 40)
    #expect(next.lastTimestamp == first + 50)
  }

  @Test func anOlderSnapshotIsNeverSentAfterANewerOne() {
    #expect(
      run([snapshot(5, .picking), snapshot(4, .placed), snapshot(5, .picking)]).map(shape) == [
        "p10 update", "skip stale", "skip stale",
      ])
  }

  @Test func overTheHourlyBudgetUpdatesGoAtFiveAndTheBudgetComesBackAfterAnHour() {
    var state = ActivityState(startedAt: start)
    var shapes: [String] = []
    let statuses: [TrackingStatus] = [.placed, .picking, .problem, .picking, .problem]
    for (index, status) in statuses.enumerated() {
      let (decision, next) = policy.decide(
        snapshot(Int64(index + 1), status), state: state, now: start + Double(index))
      state = next
      shapes.append(shape(decision))
    }
    #expect(
      shapes == ["p10 update", "p10 update", "p10 update", "p5 update downgraded", "p5 update downgraded"])
    let (later, _) = policy.decide(snapshot(6, .picking), state: state, now: start + 3601)
    #expect(shape(later) == "p10 update")
  }

  @Test func anActivityOlderThanEightHoursGetsNothing() {
    let (decision, next) = policy.decide(
      snapshot(1, .picking), state: ActivityState(startedAt: start), now: start + 8 * 3600)
    #expect(decision == .skip(.expired))
    #expect(next.ended)
  }

  /// Within a quarter of an hour of its eight hours, the next update ends the card with its
  /// content and says the order is still being handled; nothing more goes to it.
  @Test func nearItsEightHoursTheNextUpdateEndsTheActivityWithItsContent() {
    let now = start + 8 * 3600 - 15 * 60
    var state = ActivityState(startedAt: start)
    state.lastVersion = 2
    state.shown = LiveActivityContent(snapshot(2, .picking))
    let (decision, next) = policy.decide(snapshot(3, .onTheWay, rider: "Ana"), state: state, now: now)
    guard case .send(let push) = decision else {
      Issue.record("no push: \(decision)")
      return
    }
    #expect(push.event == .end && push.alert == .stillHandled && push.priority == 10)
    #expect(next.ended && next.shown?.status == "onTheWay")
    #expect(policy.decide(snapshot(4, .arriving), state: next, now: now + 60).0 == .skip(.ended))
    // A minute earlier it is an update like any other.
    let (earlier, _) = policy.decide(snapshot(3, .onTheWay, rider: "Ana"), state: state, now: now - 60)
    #expect(shape(earlier) == "p10 update")
    // The order's own end near the limit keeps its own alert.
    let (delivered, _) = policy.decide(snapshot(3, .delivered, eta: nil), state: state, now: now)
    guard case .send(let end) = delivered else { return }
    #expect(end.event == .end && end.alert == .delivered)
  }

  /// With no update to carry it, the sweep's end: what the card shows, stamped after the last
  /// push, once; not before the margin, not after the system ended it, not for a card never shown.
  @Test func anActivityWithoutUpdatesIsEndedAtTheMarginOnce() throws {
    var state = ActivityState(startedAt: start)
    state.shown = LiveActivityContent(snapshot(2, .picking))
    state.lastTimestamp = Int(start.timeIntervalSince1970) + 9_999_999
    let at = start + 8 * 3600 - 10 * 60
    let (push, next) = try #require(policy.endAtLimit(state, now: at))
    #expect(push.event == .end && push.alert == .stillHandled && push.relevance == 0)
    #expect(push.timestamp == state.lastTimestamp + 1 && next.lastTimestamp == push.timestamp)
    #expect(next.ended && policy.endAtLimit(next, now: at) == nil)
    #expect(policy.endAtLimit(state, now: start + 8 * 3600 - 16 * 60) == nil, "before the margin")
    #expect(policy.endAtLimit(state, now: start + 8 * 3600) == nil, "the system ended it")
    state.shown = nil
    #expect(policy.endAtLimit(state, now: at) == nil, "nothing shown yet")
  }

  @Test func everyPushCarriesItsRelevance() {
    let decisions = run([snapshot(1, .placed), snapshot(2, .onTheWay, rider: "Ana")])
    let scores = decisions.compactMap { decision -> Double? in
      if case .send(let push) = decision { return push.relevance }
      return nil
    }
    #expect(
      scores == [
        LiveActivityRelevance.score(snapshot(1, .placed)),
        LiveActivityRelevance.score(snapshot(2, .onTheWay, rider: "Ana")),
      ])
    #expect(scores[1] > scores[0])
  }
}

/// Two orders at once: the one nearer to the door ranks higher.
@Suite struct LiveActivityRelevanceTests {
  let at = Date(timeIntervalSince1970: 1_790_000_000)

  func score(_ status: TrackingStatus, minutes: Double?) -> Double {
    LiveActivityRelevance.score(
      TrackingSnapshot(
        orderId: "o", version: 1, status: status, problem: nil,
        eta: minutes.map { ETARange(earliest: at + $0 * 30, latest: at + $0 * 60) }, rider: nil,
        destination: nil, generatedAt: at))
  }

  @Test func theStageRanksFirstThenTheMinutesLeft() {
    #expect(score(.placed, minutes: 20) == 179)
    #expect(score(.picking, minutes: 20) == 279 && score(.problem, minutes: 20) == 279)
    #expect(score(.onTheWay, minutes: 12) == 387)
    #expect(score(.arriving, minutes: 2) == 497)
    #expect(score(.arriving, minutes: 0) == 499 && score(.arriving, minutes: -5) == 499, "late counts as now")
    #expect(score(.onTheWay, minutes: 500) == 300, "99 minutes or more count as 99")
    #expect(score(.onTheWay, minutes: nil) == 300)
    #expect(score(.delivered, minutes: nil) == 0 && score(.cancelled, minutes: nil) == 0)
    // An order on its way outranks one still packed, whatever their ETAs.
    #expect(score(.onTheWay, minutes: 90) > score(.picking, minutes: 1))
  }
}
