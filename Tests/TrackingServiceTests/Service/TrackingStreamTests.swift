import Foundation
import GrocerContracts
import GrocerCore
import GrocerHTTP
import GrocerHTTPTesting
import GrocerTestSupport
import Testing

@testable import TrackingService

/// `GET /v1/orders/{id}/tracking/events`: the snapshot, then each new version, ids that resume
/// without repeats, heartbeats, the end after a final state, the snapshot's access rules.
@Suite struct TrackingStreamTests {
  func versions(_ reader: StreamReader) -> [Int64] {
    reader.events.compactMap { $0["id"].flatMap { Int64($0) } }
  }

  @Test(arguments: TestEngine.allCases) func aStreamSendsEveryNewVersionAndEndsAfterTheLast(
    _ engine: TestEngine
  )
    async throws
  {
    let fixture = try TrackingFixture(engine: engine)
    try fixture.place("o1")
    let reader = try await fixture.stream("o1")
    #expect(await reader.read { $0.contains("id: 1\n") })
    #expect(reader.text.hasPrefix("retry: 5000\n\n"))
    let first = try JSON.decode(
      TrackingSnapshot.self, from: Data(try #require(reader.events.first?["data"]).utf8))
    #expect(
      first.version == 1 && first.status == .placed
        && first.liveActivity?.state == LiveActivityView.State.none)
    _ = await fixture.status("o1", #"{"status":"picking"}"#)
    _ = await fixture.status("o1", #"{"status":"onTheWay","rider":{"id":"r7","firstName":"Ana"}}"#)
    _ = await fixture.fix("o1", lat: 52.52, lng: 13.40, at: fixture.clock.now())
    #expect(await reader.read { $0.contains("id: 4\n") })
    #expect(!reader.isEnded)
    #expect(await fixture.status("o1", #"{"status":"arriving"}"#, as: fixture.rider()).status == 200)
    #expect(await fixture.status("o1", #"{"status":"delivered"}"#, as: fixture.rider()).status == 200)
    #expect(await reader.read { _ in reader.isEnded }, "closed after the final state")
    #expect(versions(reader) == [1, 2, 3, 4, 5, 6])
    let last = try JSON.decode(
      TrackingSnapshot.self, from: Data(try #require(reader.events.last?["data"]).utf8))
    let polled = try await fixture.tracking("o1")
    #expect(last.status == .delivered && last == polled)
    #expect(fixture.app.commands.streams.count == 0)
  }

  @Test func aReconnectingClientGetsOnlyWhatItHasNotSeen() async throws {
    let fixture = try TrackingFixture()
    try fixture.place("o1")
    _ = await fixture.status("o1", #"{"status":"picking"}"#)
    let resumed = try await fixture.stream("o1", lastEventID: "2")
    let caughtUp = try await fixture.stream("o1", lastEventID: "1")
    _ = await fixture.status("o1", #"{"status":"onTheWay","rider":{"id":"r7","firstName":"Ana"}}"#)
    #expect(await resumed.read { $0.contains("id: 3\n") })
    #expect(await caughtUp.read { $0.contains("id: 3\n") })
    #expect(versions(resumed) == [3], "nothing it had")
    #expect(versions(caughtUp) == [2, 3])
    // A finished order: its last version, then the end; nothing at all for one who has it.
    _ = await fixture.status("o1", #"{"status":"cancelled","reason":"rain"}"#)
    let late = try await fixture.stream("o1")
    #expect(await late.read { _ in late.isEnded })
    #expect(versions(late) == [4])
    let done = try await fixture.stream("o1", lastEventID: "4")
    #expect(await done.read { _ in done.isEnded })
    #expect(done.events.isEmpty)
  }

  @Test func theSnapshotsAccessRulesHold() async throws {
    let fixture = try TrackingFixture()
    try fixture.place("o1")
    let path = "/v1/orders/o1/tracking/events"
    #expect(await fixture.client.get(path).status == 401)
    #expect(await fixture.client.get(path, headers: fixture.headers("u2")).status == 404)
    #expect(
      await fixture.client.get("/v1/orders/nope/tracking/events", headers: fixture.customer).status == 404)
    #expect(await fixture.client.get(path, headers: fixture.rider("r9")).status == 404)
    var bad = fixture.customer
    bad["Last-Event-ID"] = "seven"
    let refused = await fixture.client.get(path, headers: bad)
    #expect(refused.status == 400 && refused.bodyString.contains("invalidLastEventId"))
    // Staff of the hub may follow it.
    _ = try await fixture.stream("o1", as: fixture.staff)
  }

  /// Versions that come out of order (another replica's, still on its way through the broker,
  /// or a commit that overtook another) go out in order; one that never comes is skipped after
  /// `gapWait`, and the final state still ends the stream.
  @Test func versionsGoOutInOrderAndAMissingOneIsWaitedForBriefly() async throws {
    let fixture = try TrackingFixture()
    try fixture.place("o1")
    let streams = TrackingStreams(gapWait: 0.3)
    let record = try #require(try fixture.app.commands.record("o1"))
    let first = record.reply(at: fixture.clock.now(), notices: streams.notices)
    #expect(first.version == 1)
    func version(_ number: Int64, _ status: TrackingStatus = .picking) -> TrackingSnapshot {
      var snapshot = first
      snapshot.version = number
      snapshot.status = status
      return snapshot
    }
    let reader = StreamReader(streams.open("o1", hub: record.hub, after: 0))
    streams.publish(version(2))  // committed before the stream's first read: held for it
    streams.start(reader.stream, orderId: "o1", with: record, at: fixture.clock.now())
    streams.publish(version(4))
    streams.publish(version(3))
    streams.publish(version(2))
    #expect(await reader.read { $0.contains("id: 4\n") })
    #expect(versions(reader) == [1, 2, 3, 4])
    let held = ContinuousClock.now
    streams.publish(version(6))
    streams.publish(version(7, .delivered))
    #expect(await reader.read { _ in reader.isEnded }, "closed after the final state")
    #expect(ContinuousClock.now - held >= .milliseconds(250), "version 5 was not waited for")
    #expect(versions(reader) == [1, 2, 3, 4, 6, 7])
    #expect(streams.count == 0)
  }

  @Test func heartbeatsKeepStreamsAliveAndFindTheOnesThatLeft() async throws {
    let fixture = try TrackingFixture()
    try fixture.place("o1")
    let staying = try await fixture.stream("o1")
    let leaving = try await fixture.stream("o1")
    #expect(fixture.app.commands.streams.count == 2)
    leaving.stream.cancel()  // what the transport does when the client is gone
    #expect(fixture.app.commands.streams.heartbeat() == 1)
    #expect(await staying.read { $0.contains(": heartbeat\n\n") })
    _ = await fixture.status("o1", #"{"status":"picking"}"#)
    #expect(await staying.read { $0.contains("id: 2\n") })
  }
}
