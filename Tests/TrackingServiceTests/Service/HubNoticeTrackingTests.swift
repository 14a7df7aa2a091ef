import Foundation
import GrocerContracts
import GrocerCore
import GrocerTestSupport
import Testing

@testable import TrackingService

/// A hub's notice in the snapshots of its running orders: taken from `hub.notice` (newer only),
/// shown until it expires, never on a finished order, kept across a restart.
@Suite struct HubNoticeTrackingTests {
  func notice(_ fixture: TrackingFixture, _ title: String, minutes: Double = 60, hub: HubID = "h1")
    -> HubNotice
  {
    HubNotice(
      noticeId: "ntc_\(title)", hub: hub, title: title, body: "\(title) body", postedAt: fixture.clock.now(),
      expiresAt: fixture.clock.now() + minutes * 60)
  }

  @Test(arguments: TestEngine.allCases) func runningOrdersAtTheHubShowItsNoticeUntilItEnds(
    _ engine: TestEngine
  )
    async throws
  {
    let fixture = try TrackingFixture(engine: engine)
    try fixture.place("o1")
    try fixture.place("o2")
    try fixture.place("o3", hub: "h2")
    _ = await fixture.status("o2", #"{"status":"cancelled","reason":"out of stock"}"#)
    #expect(try await fixture.tracking("o1").notice == nil, "none yet (and the reply is now remembered)")
    let commands = fixture.app.commands
    #expect(try commands.recordNotice(notice(fixture, "Rain"), sequence: 1, messageID: "n1", consumer: "t"))
    let shown = try await fixture.tracking("o1").notice
    #expect(shown?.title == "Rain" && shown?.body == "Rain body")
    #expect(try await fixture.tracking("o2").notice == nil, "a finished order")
    #expect(try await fixture.tracking("o3").notice == nil, "another hub")
    // An older one arriving late, or the same message again, changes nothing; a newer replaces it.
    #expect(try !commands.recordNotice(notice(fixture, "Old"), sequence: 1, messageID: "n0", consumer: "t"))
    #expect(try !commands.recordNotice(notice(fixture, "Rain"), sequence: 1, messageID: "n1", consumer: "t"))
    #expect(
      try commands.recordNotice(
        notice(fixture, "Closing", minutes: 10), sequence: 2, messageID: "n2", consumer: "t"))
    #expect(try await fixture.tracking("o1").notice?.title == "Closing")
    // A restart shows it again.
    let restarted = TrackingCommands(
      store: commands.store, clock: fixture.clock, ids: SequentialIDs(prefix: "r"))
    try restarted.loadNotices()
    #expect(restarted.notices.view(hub: "h1", status: .picking, at: fixture.clock.now())?.title == "Closing")
    // Past its end it is gone, from the remembered reply too.
    fixture.clock.advance(by: 10 * 60)
    #expect(try await fixture.tracking("o1").notice == nil)
  }

  /// An open stream gets the hub's notice as an event of its own, without an id, between
  /// versions; a stream of another hub's order does not.
  @Test func openStreamsAtTheHubGetTheNoticeAsAnEventOfItsOwn() async throws {
    let fixture = try TrackingFixture()
    try fixture.place("o1")
    try fixture.place("o2", hub: "h2")
    let here = try await fixture.stream("o1")
    let there = try await fixture.stream("o2")
    #expect(await here.read { $0.contains("id: 1\n") })
    _ = try fixture.app.commands.recordNotice(
      notice(fixture, "Rain"), sequence: 1, messageID: "n1", consumer: "t")
    #expect(await here.read { $0.contains("event: notice\n") })
    let event = try #require(here.events.first { $0["event"] == "notice" })
    #expect(event["id"] == nil && event["data"]?.contains(#""title":"Rain""#) == true)
    _ = await fixture.status("o1", #"{"status":"picking"}"#)
    #expect(await here.read { $0.contains("id: 2\n") })
    #expect(here.events.compactMap { $0["id"] } == ["1", "2"])
    there.drain()
    #expect(!there.text.contains("event: notice"))
  }

  @Test func aNoticeOnTheBrokerReachesTheSnapshot() async throws {
    let fixture = try TrackingFixture()
    try await fixture.start()
    try await withCleanup({ await fixture.stop() }) {
      let orderId = "ord-\(UUID().uuidString.prefix(8))"
      try fixture.place(orderId)
      let posted = notice(fixture, "Rain-\(orderId)")
      try await fixture.publish([
        try EventEnvelope.message(
          id: "evt-\(orderId)", type: NoticeEventType.posted, occurredAt: fixture.clock.now(),
          source: NoticeEventType.source, correlationId: nil, subject: EventSubject.notice(hub: "h1"),
          sequence: Int64(Date().timeIntervalSince1970 * 1000), payload: posted)
      ])
      let shown = await eventually(timeout: .seconds(15)) {
        (try? await fixture.tracking(orderId).notice?.title) == posted.title
      }
      #expect(shown, "hub.notice never reached the snapshot")
    }
  }
}
