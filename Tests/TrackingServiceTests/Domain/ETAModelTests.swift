import Foundation
import GrocerContracts
import Testing

@testable import TrackingService

@Suite struct ETAModelTests {
  let model = ETAModel()
  let now = Date(timeIntervalSince1970: 1_789_999_980)  // on a whole minute
  let home = GeoPoint(lat: 52.5300, lng: 13.4100)

  func input(_ stage: TrackingStatus, since: TimeInterval = 0, fix: RiderView? = nil) -> ETAModel.Input {
    ETAModel.Input(stage: stage, stageSince: now + since, fix: fix, destination: home)
  }

  func fix(metresNorth: Double, age: TimeInterval = 0) -> RiderView {
    RiderView(
      firstName: "Ana", lat: home.lat + metresNorth / 111_195, lng: home.lng, recordedAt: now - age)
  }

  @Test func aNewOrderGetsTheUsualStagePlusARide() throws {
    let eta = try #require(model.estimate(input(.placed), now: now))
    #expect(eta.earliest == now + 120 + 480)
    #expect(eta.latest == now + 300 + 720)
  }

  @Test func onTheWayItFollowsTheRider() throws {
    // 2 km away as the crow flies: 2,600 m of street at 4.5 m/s ≈ 578 s.
    let eta = try #require(model.estimate(input(.onTheWay, fix: fix(metresNorth: 2000)), now: now))
    let ride =
      ETAModel.distance(from: GeoPoint(lat: home.lat + 2000 / 111_195, lng: home.lng), to: home) * 1.3 / 4.5
    #expect(abs(ride - 578) < 3)
    #expect(eta.earliest == ETAModel.ceilToMinute(now + ride * 0.9))
    #expect(eta.latest == ETAModel.ceilToMinute(now + ride * 1.3 + 60))
    // Closer is sooner.
    let closer = try #require(model.estimate(input(.onTheWay, fix: fix(metresNorth: 500)), now: now))
    #expect(closer.latest < eta.latest)
  }

  @Test func neverASingleInstantNeverInThePastAlwaysWholeMinutes() throws {
    for stage in [TrackingStatus.placed, .picking, .onTheWay, .arriving] {
      for since in stride(from: -7200.0, through: 0, by: 333) {
        for metres in [0.0, 50, 900, 12_000] {
          for age in [0.0, 40, 3600] {
            let eta = try #require(
              model.estimate(input(stage, since: since, fix: fix(metresNorth: metres, age: age)), now: now))
            #expect(eta.earliest >= now, "\(stage) \(since) \(metres) \(age)")
            #expect(eta.latest.timeIntervalSince(eta.earliest) >= 120)
            #expect(eta.earliest.timeIntervalSince1970.truncatingRemainder(dividingBy: 60) == 0)
            #expect(eta.latest.timeIntervalSince1970.truncatingRemainder(dividingBy: 60) == 0)
          }
        }
      }
    }
  }

  @Test func aLateRiderMovesTheRangeForward() throws {
    // The rider's last fix, 10 minutes old, said "5 minutes away": that range is over.
    let stale = fix(metresNorth: 1000, age: 600)
    let eta = try #require(model.estimate(input(.onTheWay, since: -900, fix: stale), now: now))
    #expect(eta.earliest == now)
    #expect(eta.latest == now + 120)
    let later = try #require(model.estimate(input(.onTheWay, since: -900, fix: stale), now: now + 90))
    #expect(later.earliest > eta.earliest)
  }

  @Test func finishedOrdersHaveNone() {
    #expect(model.estimate(input(.delivered), now: now) == nil)
    #expect(model.estimate(input(.cancelled), now: now) == nil)
  }
}
