import APNsSimulator
import Foundation
import GrocerContracts
import GrocerCore
import GrocerHTTP
import GrocerStorage
import Testing

@testable import NotifyGateway

/// Hub notices: staff post one, it is broadcast to the hub's channel (made once), published as
/// `hub.notice`, and the hub's current notice and channel can be read.
@Suite struct HubNoticeTests {
  func post(_ fixture: NotifyFixture, _ body: String, hub: String = "h1", as headers: [String: String]? = nil)
    async -> HTTPResponse
  {
    var fields = headers ?? fixture.headers("s1", role: .staff)
    fields["Content-Type"] = "application/json"
    return await fixture.client.send("POST", "/v1/hubs/\(hub)/notices", headers: fields, body: body)
  }

  /// The outbox's `hub.notice` events: (subject, sequence, notice).
  func notices(_ fixture: NotifyFixture) throws -> [(String, Int64, HubNotice)] {
    try fixture.app.store.database.read { try Outbox.pending(limit: 100, in: $0) }.compactMap { entry in
      let envelope = try JSON.decode(EventEnvelope.self, from: entry.message.body)
      guard envelope.type == NoticeEventType.posted else { return nil }
      return (envelope.subject, envelope.sequence, try envelope.payload(as: HubNotice.self))
    }
  }

  @Test func aNoticeIsBroadcastToTheHubsChannelAndPublished() async throws {
    let fixture = try NotifyFixture()
    let posted = await post(
      fixture, #"{"title":"Rain delay","body":"Riders are slower in the rain today.","minutes":90}"#)
    #expect(posted.status == 201, "\(posted.bodyString)")
    let notice = try posted.json(as: HubNotice.self)
    #expect(
      notice.hub == "h1" && notice.title == "Rain delay" && notice.expiresAt == notice.postedAt + 90 * 60)
    await fixture.deliver()
    let simulator = try #require(fixture.app.simulator)
    let channel = try #require(simulator.channelIDs.first)
    let broadcasts = try simulator.broadcasts(to: channel)
    #expect(broadcasts.map(\.status) == [200])
    guard case .object(let root)? = broadcasts.first?.payload, case .object(let aps)? = root["aps"],
      case .object(let content)? = aps["content-state"]
    else {
      Issue.record("no broadcast payload")
      return
    }
    #expect(content["title"] == .string("Rain delay") && content["hub"] == .string("h1"))
    #expect(aps["event"] == .string("update") && aps["alert"] != nil && aps["stale-date"] != nil)
    #expect(broadcasts.first?.headers["apns-channel-id"] == channel)
    // A second notice: the same channel, the newer notice shown, sequences per hub.
    #expect(
      await post(fixture, #"{"title":"Closing early","body":"We close at 21:00 tonight."}"#).status == 201)
    await fixture.deliver()
    #expect(simulator.channelIDs == [channel], "one channel per hub")
    #expect(try simulator.broadcasts(to: channel).count == 2)
    let current = await fixture.client.get("/v1/hubs/h1/notices", headers: fixture.headers("u1"))
    #expect(current.status == 200)
    #expect(
      current.bodyString.contains(#""channelId":"\#(channel)""#)
        && current.bodyString.contains("Closing early"))
    let events = try notices(fixture)
    #expect(events.map(\.0) == ["notice/h1", "notice/h1"] && events.map(\.1) == [1, 2])
    let outcomes = try fixture.outcomes().filter { $0.outcome.tokenKind == .channel }
    #expect(outcomes.map(\.type) == [PushEventType.delivered, PushEventType.delivered])
    #expect(outcomes.allSatisfy { $0.outcome.token == channel })
    // Another hub has none yet.
    let other = await fixture.client.get("/v1/hubs/h2/notices", headers: fixture.headers("u1"))
    #expect(other.bodyString.contains(#""channelId":null"#) && other.bodyString.contains(#""notice":null"#))
  }

  @Test func onlyTheHubsStaffPostAndBadNoticesAreRefused() async throws {
    let fixture = try NotifyFixture()
    let good = #"{"title":"Rain","body":"Slower today."}"#
    #expect(await post(fixture, good, as: ["Authorization": ""]).status == 401)
    #expect(await post(fixture, good, as: fixture.headers("u1")).status == 403)
    let staffOfH2 = await post(
      fixture, good, hub: "h1", as: fixture.headers("s2", role: .staff, hubs: ["h2"]))
    #expect(staffOfH2.status == 403 && staffOfH2.bodyString.contains("notYourHub"))
    for (body, code) in [
      (#"{"title":"","body":"x"}"#, "titleRequired"),
      (#"{"title":"x","body":"   "}"#, "bodyRequired"),
      (#"{"title":"\#(String(repeating: "t", count: 61))","body":"x"}"#, "titleRequired"),
      (#"{"title":"a\u0007b","body":"x"}"#, "titleInvalid"),
      (#"{"title":"x","body":"y","minutes":0}"#, "invalidDuration"),
      (#"{"title":"x","body":"y","minutes":1441}"#, "invalidDuration"),
    ] {
      let refused = await post(fixture, body)
      #expect(refused.status == 422 && refused.bodyString.contains(code), "\(body): \(refused.bodyString)")
    }
    #expect(await post(fixture, #"{"title":"x","body":"y","colour":"red"}"#).status == 400)
    #expect(await post(fixture, "{").status == 400)
    #expect(await post(fixture, #"{"title":"x"}"#).status == 400)
    #expect(try notices(fixture).isEmpty, "nothing refused was published")
  }

  /// A hub's channel deleted at APNs (by an operator, or with the app's channels reset): the
  /// next notice forgets it, makes a new one and is broadcast there; nothing fails.
  @Test func aChannelAPNsNoLongerKnowsIsReplacedByANewOne() async throws {
    let fixture = try NotifyFixture()
    let simulator = try #require(fixture.app.simulator)
    #expect(await post(fixture, #"{"title":"Rain","body":"Slower today."}"#).status == 201)
    await fixture.deliver()
    let first = try #require(simulator.channelIDs.first)
    #expect(try simulator.deleteChannel(first).status == 204)
    #expect(await post(fixture, #"{"title":"Closing early","body":"At 21:00."}"#).status == 201)
    await fixture.deliver()
    let second = try #require(simulator.channelIDs.first)
    #expect(second != first && simulator.channelIDs.count == 1)
    #expect(try simulator.broadcasts(to: first).map(\.reason) == [nil, "BadChannelId"])
    #expect(try simulator.broadcasts(to: second).map(\.status) == [200])
    let current = await fixture.client.get("/v1/hubs/h1/notices", headers: fixture.headers("u1"))
    #expect(current.bodyString.contains(#""channelId":"\#(second)""#))
    let outcomes = try fixture.outcomes().filter { $0.outcome.tokenKind == .channel }
    #expect(outcomes.map(\.type) == [PushEventType.delivered, PushEventType.delivered])
    #expect(outcomes.map(\.outcome.token) == [first, second])
  }

  @Test func aNoticeThatExpiredBeforeItsBroadcastIsNotSent() async throws {
    let fixture = try NotifyFixture()
    #expect(await post(fixture, #"{"title":"Brief","body":"One minute.","minutes":1}"#).status == 201)
    fixture.clock.advance(by: 61)
    await fixture.deliver()
    #expect(fixture.app.simulator?.channelIDs.isEmpty == true)
    let failed = try fixture.outcomes().filter { $0.outcome.tokenKind == .channel }
    #expect(failed.map(\.type) == [PushEventType.failed] && failed.first?.outcome.reason == "Expired")
  }
}
