import Foundation
import GrocerContracts
import GrocerCore
import GrocerHTTP
import GrocerStorage
import GrocerTestSupport
import Testing

@testable import TrackingService

/// Adversarial review of TrackingService: promises of SPEC.md / issue 5 tried against extreme
/// input and races.
@Suite struct TrackingReviewTests {
  let fixture: TrackingFixture
  init() throws { fixture = try TrackingFixture() }

  @Test func staffOfAnotherHubCannotTellThatAnOrderExists() async throws {
    try fixture.place("o1", hub: "h1")
    let other = fixture.headers("s9", role: .staff, hubs: ["h2"])
    let read = await fixture.client.get("/v1/orders/o1/tracking", headers: other)
    let missing = await fixture.status("nope", #"{"status":"picking"}"#, as: other)
    let existing = await fixture.status("o1", #"{"status":"picking"}"#, as: other)
    #expect(read.status == 404)
    #expect(missing.status == 404)
    #expect(
      existing.status == missing.status,
      "an order of another hub answers \(existing.status), one that does not exist \(missing.status)")
  }

  @Test func aProblemDoesNotLetAnotherRiderTakeAnOrderThatIsOnItsWay() {
    let ana = AssignedRider(id: "r7", firstName: "Ana")
    let bo = AssignedRider(id: "r8", firstName: "Bo")
    let onTheWay = TrackingState(status: .onTheWay, rider: ana)
    // Directly: refused (reassigning goes back to picking first).
    guard case .failure = TrackingMachine.apply(.onTheWay(rider: bo), to: onTheWay) else {
      Issue.record("onTheWay(Ana) → onTheWay(Bo) accepted")
      return
    }
    // Through a problem: the same reassignment should be refused as well.
    guard case .success(let problem?) = TrackingMachine.apply(.problem(message: "flat tyre"), to: onTheWay)
    else {
      Issue.record("problem refused")
      return
    }
    let result = TrackingMachine.apply(.onTheWay(rider: bo), to: problem)
    if case .success(let next?) = result {
      Issue.record("problem(onTheWay, Ana) → onTheWay(Bo) accepted: \(next)")
    }
  }

  @Test func extremeFixesAreRefusedWithoutA500() async throws {
    try fixture.place("o1")
    _ = await fixture.status("o1", #"{"status":"picking"}"#)
    _ = await fixture.status("o1", #"{"status":"onTheWay","rider":{"id":"r7","firstName":"Ana"}}"#)
    let now = Timestamp.string(from: fixture.clock.now())
    let bodies = [
      #"{"lat":1e308,"lng":13.4,"recordedAt":"\#(now)"}"#,
      #"{"lat":1e400,"lng":13.4,"recordedAt":"\#(now)"}"#,
      #"{"lat":-1e400,"lng":13.4,"recordedAt":"\#(now)"}"#,
      #"{"lat":"NaN","lng":13.4,"recordedAt":"\#(now)"}"#,
      #"{"lat":NaN,"lng":13.4,"recordedAt":"\#(now)"}"#,
      #"{"lat":Infinity,"lng":13.4,"recordedAt":"\#(now)"}"#,
      #"{"lat":null,"lng":13.4,"recordedAt":"\#(now)"}"#,
      #"{"lat":52.5,"lng":13.4,"recordedAt":"9999-12-31T23:59:59Z"}"#,
      #"{"lat":52.5,"lng":13.4,"recordedAt":"2026-13-45T99:99:99Z"}"#,
      #"{"lat":52.5,"lng":13.4,"recordedAt":1e308}"#,
      #"{"lat":52.5,"lng":13.4,"recordedAt":"\#(String(repeating: "9", count: 10000))"}"#,
      #"[]"#, #"null"#, #"1e999"#, #""#,
    ]
    for body in bodies {
      let response = await fixture.client.send(
        "POST", "/v1/orders/o1/rider", headers: fixture.rider(), body: body)
      #expect((400..<500).contains(response.status), "\(body.prefix(80)) → \(response.status)")
    }
    let statusBodies = [
      #"{"status":"onTheWay","rider":{"id":"\#(String(repeating: "r", count: 100_000))","firstName":"A"}}"#,
      #"{"status":"problem","message":"\#(String(repeating: "é", count: 20_000))"}"#,
      #"{"status":"PICKING"}"#, #"{"status":"placed"}"#, #"{"status":null}"#,
    ]
    for body in statusBodies {
      let response = await fixture.status("o1", body)
      #expect((400..<500).contains(response.status), "\(body.prefix(80)) → \(response.status)")
    }
    #expect(try await fixture.tracking("o1").version == 3)
  }

  @Test func aFixFromTheYearZeroIsNotAcceptedAsTheRidersPosition() async throws {
    try fixture.place("o1")
    _ = await fixture.status("o1", #"{"status":"picking"}"#)
    _ = await fixture.status("o1", #"{"status":"onTheWay","rider":{"id":"r7","firstName":"Ana"}}"#)
    let response = await fixture.client.send(
      "POST", "/v1/orders/o1/rider", headers: fixture.rider(),
      body: #"{"lat":52.5,"lng":13.4,"recordedAt":"0000-01-01T00:00:00Z"}"#)
    #expect(response.status == 422, "\(response.bodyString)")
    #expect(try await fixture.tracking("o1").rider == nil)
  }

  @Test func aCancellationReasonOfControlCharactersIsRefused() async throws {
    try fixture.place("o1")
    let response = await fixture.status("o1", #"{"status":"cancelled","reason":"\u0000\u0007"}"#)
    #expect(response.status == 422, "\(response.bodyString)")
    #expect(try await fixture.tracking("o1").status == .placed)
  }

  /// The same race through two replicas on one PostgreSQL database: the versions of the
  /// events they write together are still contiguous and each accepted change has its own.
  @Test func twoReplicasRacingOnOneOrderBumpTheVersionOnceEach() async throws {
    let location = try TestEngine.postgres.freshLocation("tracking")
    defer { location.remove() }
    let replicas = [try TrackingFixture(sharing: location), try TrackingFixture(sharing: location)]
    try replicas[0].place("o1")
    _ = await replicas[1].status("o1", #"{"status":"picking"}"#)
    _ = await replicas[0].status("o1", #"{"status":"onTheWay","rider":{"id":"r7","firstName":"Ana"}}"#)
    let base = replicas[0].clock.now()
    let accepted = await withTaskGroup(of: Int.self) { group in
      for n in 0..<40 {
        let replica = replicas[n % 2]
        group.addTask {
          if n % 4 < 2 {
            let r = await replica.fix(
              "o1", lat: 52.5 + Double(n) / 1000, lng: 13.4, at: base - 60 + Double(n))
            return r.status == 200 && r.headers["Grocer-Fix-Ignored"] == nil ? 1 : 0
          } else {
            let r = await replica.status("o1", #"{"status":"problem","message":"m\#(n)"}"#)
            return r.status == 200 ? 1 : 0
          }
        }
      }
      return await group.reduce(0, +)
    }
    // Both replicas write one outbox: either reads all of it.
    let versions = try replicas[1].updates("o1").map(\.snapshot.version)
    #expect(versions == Array(1...Int64(versions.count)), "contiguous, in order")
    #expect(versions.count == 3 + accepted)
    #expect(try await replicas[0].tracking("o1").version == versions.last)
    #expect(accepted >= 20)
  }

  @Test func concurrentStaffAndRiderChangesBumpTheVersionOnceEach() async throws {
    try fixture.place("o1")
    _ = await fixture.status("o1", #"{"status":"picking"}"#)
    _ = await fixture.status("o1", #"{"status":"onTheWay","rider":{"id":"r7","firstName":"Ana"}}"#)
    let base = fixture.clock.now()
    let fixture = self.fixture
    let accepted = await withTaskGroup(of: Int.self) { group in
      for n in 0..<40 {
        group.addTask {
          if n.isMultiple(of: 2) {
            let r = await fixture.fix(
              "o1", lat: 52.5 + Double(n) / 1000, lng: 13.4, at: base - 60 + Double(n))
            return r.status == 200 && r.headers["Grocer-Fix-Ignored"] == nil ? 1 : 0
          } else {
            let r = await fixture.status("o1", #"{"status":"problem","message":"m\#(n)"}"#)
            return r.status == 200 ? 1 : 0
          }
        }
      }
      return await group.reduce(0, +)
    }
    let updates = try fixture.updates("o1")
    let versions = updates.map(\.snapshot.version)
    #expect(versions == Array(1...Int64(versions.count)), "contiguous, in order")
    #expect(try await fixture.tracking("o1").version == versions.last)
    #expect(accepted >= 20)
  }
}
