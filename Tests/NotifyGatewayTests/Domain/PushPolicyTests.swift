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
}
