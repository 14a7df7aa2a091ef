import Foundation
import GrocerContracts
import GrocerCore
import GrocerHTTP
import GrocerStorage
import GrocerTestSupport
import Testing

@testable import TrackingService

/// The HTTP API in-process. The tests that walk an order through its life run on both engines.
@Suite struct TrackingHTTPTests {
  @Test func aConfirmedOrderStartsPlacedAtVersionOneWithAnETA() async throws {
    let fixture = try TrackingFixture()
    try fixture.place("o1")
    let snapshot = try await fixture.tracking("o1")
    #expect(snapshot.version == 1)
    #expect(snapshot.status == .placed)
    #expect(snapshot.destination == TrackingFixture.home)
    #expect(snapshot.rider == nil)
    #expect(snapshot.problem == nil)
    let eta = try #require(snapshot.eta)
    #expect(eta.earliest >= snapshot.generatedAt)
    #expect(eta.latest > eta.earliest)
    // The same event again, or the same order under another message id, creates nothing.
    let commands = fixture.app.commands
    #expect(
      try !commands.startTracking(
        fixture.confirmed("o1"), messageID: "m-o1", consumer: fixture.configuration.serviceName,
        correlationID: nil))
    #expect(
      try !commands.startTracking(
        fixture.confirmed("o1"), messageID: "other", consumer: fixture.configuration.serviceName,
        correlationID: nil))
    #expect(try fixture.updates("o1").count == 1)
    #expect(try await fixture.tracking("o1").version == 1)
  }

  @Test(arguments: TestEngine.allCases) func theHappyPathBumpsTheVersionOnceForEachChange(
    _ engine: TestEngine
  ) async throws {
    let fixture = try TrackingFixture(engine: engine)
    try fixture.place("o1")
    #expect(await fixture.status("o1", #"{"status":"picking"}"#).status == 200)
    // A retried request changes nothing.
    #expect(await fixture.status("o1", #"{"status":"picking"}"#).status == 200)
    let onTheWay = await fixture.status("o1", #"{"status":"onTheWay","rider":{"id":"r7","firstName":"Ana"}}"#)
    #expect(onTheWay.status == 200, "\(onTheWay.bodyString)")
    fixture.clock.advance(by: 10)
    let moved = await fixture.fix("o1", lat: 52.52, lng: 13.40, at: fixture.clock.now() - 2)
    #expect(moved.status == 200, "\(moved.bodyString)")
    let snapshot = try moved.json(as: TrackingSnapshot.self)
    #expect(snapshot.rider?.firstName == "Ana")
    #expect(snapshot.rider?.lat == 52.52)
    #expect(await fixture.status("o1", #"{"status":"arriving"}"#, as: fixture.rider()).status == 200)
    #expect(await fixture.status("o1", #"{"status":"delivered"}"#, as: fixture.rider()).status == 200)
    let final = try await fixture.tracking("o1")
    #expect(final.status == .delivered)
    #expect(final.eta == nil)
    #expect(final.version == 6)

    let updates = try fixture.updates("o1")
    #expect(updates.map(\.snapshot.version) == [1, 2, 3, 4, 5, 6], "one event per version, in order")
    #expect(
      updates.map(\.snapshot.status) == [.placed, .picking, .onTheWay, .onTheWay, .arriving, .delivered])
    #expect(updates[3].changed.contains(.rider))
    #expect(!updates[3].changed.contains(.stage))
    #expect(updates[4].changed.contains(.stage))
    #expect(updates[4].previousStatus == .onTheWay)
    #expect(updates.allSatisfy { $0.userId == "u1" && $0.hub == "h1" })
  }

  @Test func illegalMovesAre409NamingBothStatesAndTerminalStaysTerminal() async throws {
    let fixture = try TrackingFixture()
    try fixture.place("o1")
    let skip = await fixture.status("o1", #"{"status":"delivered"}"#)
    #expect(skip.status == 409)
    let problem = try skip.json(as: Problem.self)
    #expect(problem.code == "illegalTransition")
    #expect(problem.detail.contains("placed") && problem.detail.contains("delivered"))
    #expect(await fixture.status("o1", #"{"status":"cancelled","reason":"hub closed"}"#).status == 200)
    for body in [
      #"{"status":"picking"}"#, #"{"status":"problem","message":"x"}"#,
      #"{"status":"cancelled","reason":"again"}"#,
    ] {
      #expect(await fixture.status("o1", body).status == 409, "\(body)")
    }
    let snapshot = try await fixture.tracking("o1")
    #expect(snapshot.status == .cancelled)
    #expect(snapshot.problem == "hub closed")
    #expect(snapshot.version == 2)
  }

  @Test func badBodiesAreRefused() async throws {
    let fixture = try TrackingFixture()
    try fixture.place("o1")
    let cases: [(String, Int, String)] = [
      (#"{"status":"teleported"}"#, 422, "unknownStatus"),
      (#"{"status":"placed"}"#, 422, "unknownStatus"),
      (#"{"status":"onTheWay"}"#, 422, "riderRequired"),
      (#"{"status":"cancelled"}"#, 422, "reasonRequired"),
      (#"{"status":"problem","message":"  "}"#, 422, "messageRequired"),
      (#"{"status":1}"#, 400, "wrongType"),
      (#"{"status":"picking","colour":"red"}"#, 400, "unknownField"),
      ("{", 400, "malformedJSON"),
    ]
    for (body, status, code) in cases {
      let response = await fixture.status("o1", body)
      #expect(response.status == status, "\(body): \(response.bodyString)")
      #expect((try? response.json(as: Problem.self).code) == code, "\(body)")
    }
    #expect(try await fixture.tracking("o1").version == 1)
  }

  @Test(arguments: TestEngine.allCases) func riderFixesAreCheckedAndAnOlderOneIsIgnored(_ engine: TestEngine)
    async throws
  {
    let fixture = try TrackingFixture(engine: engine)
    try fixture.place("o1")
    _ = await fixture.status("o1", #"{"status":"picking"}"#)
    _ = await fixture.status("o1", #"{"status":"onTheWay","rider":{"id":"r7","firstName":"Ana"}}"#)
    let now = fixture.clock.now()
    #expect(await fixture.fix("o1", lat: 91, lng: 13.4, at: now).status == 422)
    #expect(await fixture.fix("o1", lat: 52.5, lng: 181, at: now).status == 422)
    let future = await fixture.fix("o1", lat: 52.5, lng: 13.4, at: now + 120)
    #expect(future.status == 422)
    #expect(try future.json(as: Problem.self).code == "fixInTheFuture")
    #expect(await fixture.fix("o1", lat: 52.5, lng: 13.4, at: now + 10).status == 200, "within the skew")
    let newer = try await fixture.tracking("o1")
    // A fix taken before the one held changes nothing, though it arrived later.
    let older = await fixture.fix("o1", lat: 52.0, lng: 13.0, at: now - 30)
    #expect(older.status == 200)
    #expect(older.headers["Grocer-Fix-Ignored"] != nil)
    #expect(try await fixture.tracking("o1") == newer)
    // Another rider does not see the order at all; staff and customers cannot post fixes.
    #expect(await fixture.fix("o1", lat: 52.5, lng: 13.4, at: now + 5, as: fixture.rider("r9")).status == 404)
    #expect(await fixture.fix("o1", lat: 52.5, lng: 13.4, at: now + 5, as: fixture.staff).status == 403)
    #expect(await fixture.fix("o1", lat: 52.5, lng: 13.4, at: now + 5, as: fixture.customer).status == 403)
  }

  @Test func whoMayDoWhat() async throws {
    let fixture = try TrackingFixture()
    try fixture.place("o1")
    // A customer posting a status: 403. Staff of another hub, a rider not assigned: 404.
    #expect(await fixture.status("o1", #"{"status":"picking"}"#, as: fixture.customer).status == 403)
    let otherHub = fixture.headers("s2", role: .staff, hubs: ["h2"])
    #expect(
      await fixture.status("o1", #"{"status":"picking"}"#, as: otherHub).status == 404,
      "as if it did not exist")
    #expect(await fixture.status("o1", #"{"status":"arriving"}"#, as: fixture.rider()).status == 404)
    _ = await fixture.status("o1", #"{"status":"picking"}"#)
    _ = await fixture.status("o1", #"{"status":"onTheWay","rider":{"id":"r7","firstName":"Ana"}}"#)
    // The assigned rider may report arriving/problem but not cancel or reassign.
    #expect(
      await fixture.status("o1", #"{"status":"cancelled","reason":"x"}"#, as: fixture.rider()).status == 403)
    #expect(await fixture.status("o1", #"{"status":"picking"}"#, as: fixture.rider()).status == 403)
    // Reading: the owner, staff of the hub, the assigned rider; anyone else 404.
    #expect(await fixture.client.get("/v1/orders/o1/tracking", headers: fixture.customer).status == 200)
    #expect(await fixture.client.get("/v1/orders/o1/tracking", headers: fixture.staff).status == 200)
    #expect(await fixture.client.get("/v1/orders/o1/tracking", headers: fixture.rider()).status == 200)
    for stranger in [fixture.headers("u2"), otherHub, fixture.rider("r9")] {
      let response = await fixture.client.get("/v1/orders/o1/tracking", headers: stranger)
      #expect(response.status == 404)
      #expect(!response.bodyString.contains("Ana"))
    }
    #expect(await fixture.client.get("/v1/orders/nope/tracking", headers: fixture.customer).status == 404)
    #expect(await fixture.client.get("/v1/orders/o1/tracking").status == 401)
  }

  @Test(arguments: TestEngine.allCases) func activeOrdersAreTheCustomersOwnUntilTheyAreLongFinished(
    _ engine: TestEngine
  ) async throws {
    let fixture = try TrackingFixture(engine: engine)
    try fixture.place("o1")
    try fixture.place("o2")
    try fixture.place("o3", user: "u2")
    _ = await fixture.status("o2", #"{"status":"cancelled","reason":"no rider"}"#)
    func active() async throws -> [String] {
      struct Active: Decodable { var orders: [TrackingSnapshot] }
      let response = await fixture.client.get("/v1/orders/active", headers: fixture.customer)
      try #require(response.status == 200)
      return try response.json(as: Active.self).orders.map(\.orderId)
    }
    #expect(try await active() == ["o1", "o2"])
    fixture.clock.advance(by: 601)
    #expect(try await active() == ["o1"], "finished more than the retention ago")
  }

  @Test(arguments: TestEngine.allCases) func aLiveActivityTokenIsTheOwnersAndReplacesTheOldOne(
    _ engine: TestEngine
  ) async throws {
    let fixture = try TrackingFixture(engine: engine)
    try fixture.place("o1")
    func put(_ token: String, as headers: [String: String]? = nil) async -> HTTPResponse {
      await fixture.client.send(
        "PUT", "/v1/orders/o1/live-activity-token", headers: headers ?? fixture.customer,
        body: #"{"token":"\#(token)"}"#)
    }
    let first = String(repeating: "ab", count: 40)
    #expect(await put(first).status == 204)
    #expect(await put(first).status == 204, "the same token again")
    #expect(await put(String(repeating: "CD", count: 40)).status == 204)
    for bad in ["xyz", "abc", "ab", String(repeating: "a", count: 2000)] {
      #expect(await put(bad).status == 422, "\(bad.prefix(10))")
    }
    #expect(await put(first, as: fixture.headers("u2")).status == 404)
    let tokens = try fixture.app.store.database.read { db in
      try Outbox.pending(limit: 100, in: db).map {
        try JSON.decode(EventEnvelope.self, from: $0.message.body)
      }
      .filter { $0.type == TrackingEventType.liveActivityToken }
    }
    #expect(tokens.map(\.sequence) == [1, 2])
    let sent = try tokens.map { (envelope: EventEnvelope) in
      try envelope.payload(as: LiveActivityToken.self).token
    }
    #expect(sent == [first, String(repeating: "cd", count: 40)])
    #expect(try tokens.first?.payload(as: LiveActivityToken.self).userId == "u1")
  }

  /// The snapshot says what the lock screen shows, from NotifyGateway's push outcomes: none
  /// without a token, current after a delivery until its stale date, stale after a failure,
  /// ended after the final push; another token's answers and old ones change nothing.
  @Test(arguments: TestEngine.allCases) func theSnapshotSaysWhetherTheLockScreenIsCurrent(
    _ engine: TestEngine
  )
    async throws
  {
    let fixture = try TrackingFixture(engine: engine)
    try fixture.place("o1")
    let commands = fixture.app.commands
    func shown() async throws -> LiveActivityView? { try await fixture.tracking("o1").liveActivity }
    var messages = 0
    func record(_ outcome: PushOutcome) throws -> Bool {
      messages += 1
      return try commands.recordPushOutcome(outcome, messageID: "m\(messages)", consumer: "t")
    }
    #expect(try await shown() == LiveActivityView(state: .none, lastPushAt: nil))
    let token = String(repeating: "ab", count: 40)
    #expect(try commands.setLiveActivityToken(token, for: "o1", correlationID: nil))
    #expect(try await shown() == LiveActivityView(state: .current, lastPushAt: nil))

    let pushedAt = Date(timeIntervalSince1970: fixture.clock.now().timeIntervalSince1970.rounded(.down))
    fixture.clock.set(pushedAt)
    #expect(try record(fixture.pushOutcome("o1", token: token, status: 200, version: 1)))
    #expect(try await shown() == LiveActivityView(state: .current, lastPushAt: pushedAt))
    #expect(
      try !commands.recordPushOutcome(
        fixture.pushOutcome("o1", token: token, status: 200, version: 1), messageID: "m1", consumer: "t"),
      "the same message again")
    // Past its stale date the card greys, though no event came.
    fixture.clock.advance(by: 180)
    #expect(try await shown() == LiveActivityView(state: .stale, lastPushAt: pushedAt))
    fixture.clock.advance(by: 10)
    #expect(try record(fixture.pushOutcome("o1", token: token, status: 200, version: 2)))
    #expect(try await shown()?.state == .current)
    fixture.clock.advance(by: 5)
    #expect(
      try record(
        fixture.pushOutcome("o1", token: token, status: 503, version: 3, reason: "ServiceUnavailable")))
    #expect(try await shown()?.state == .stale)
    #expect(
      !(try record(fixture.pushOutcome("o1", token: "cd" + token.dropFirst(2), status: 200, version: 4))))
    #expect(try await shown()?.state == .stale, "another activity's answer")
    fixture.clock.advance(by: 5)
    #expect(try record(fixture.pushOutcome("o1", token: token, status: 200, version: 5, event: "end")))
    let ended = try await shown()
    #expect(ended == LiveActivityView(state: .ended, lastPushAt: fixture.clock.now()))
    // The list of the customer's orders says the same.
    let active = await fixture.client.get("/v1/orders/active", headers: fixture.customer)
    #expect(active.bodyString.contains(#""liveActivity":{"lastPushAt":"#))
    #expect(active.bodyString.contains(#""state":"ended""#))
    // A new activity (token) starts again; APNs saying it is gone leaves none.
    let second = String(repeating: "ef", count: 40)
    #expect(try commands.setLiveActivityToken(second, for: "o1", correlationID: nil))
    #expect(try await shown() == LiveActivityView(state: .current, lastPushAt: nil))
    fixture.clock.advance(by: 1)
    #expect(
      try record(fixture.pushOutcome("o1", token: second, status: 410, version: 6, reason: "Unregistered")))
    #expect(try await shown()?.state == LiveActivityView.State.none)
  }

  /// Two replicas on one PostgreSQL database: a change through one is what the other answers
  /// next, although it had answered (and remembered) the order before.
  @Test func aReplicaAnswersTheOtherReplicasChangeAtOnce() async throws {
    let location = try TestEngine.postgres.freshLocation("tracking")
    defer { location.remove() }
    let replicaA = try TrackingFixture(sharing: location)
    let replicaB = try TrackingFixture(sharing: location, clock: replicaA.clock)
    try replicaA.place("o1")
    #expect(try await replicaB.tracking("o1").version == 1)
    #expect(await replicaA.status("o1", #"{"status":"picking"}"#).status == 200)
    let seen = try await replicaB.tracking("o1")
    #expect(seen.version == 2)
    #expect(seen.status == .picking)
  }

  /// Polls are answered from memory; after every kind of change (and a refused one) the answer
  /// is byte for byte what the database says.
  @Test(arguments: TestEngine.allCases) func pollsFromMemoryAlwaysMatchTheDatabase(_ engine: TestEngine)
    async throws
  {
    let fixture = try TrackingFixture(engine: engine)
    try fixture.place("o1")
    func check(_ step: String) async throws {
      let polled = await fixture.client.get("/v1/orders/o1/tracking", headers: fixture.customer)
      let stored = try #require(
        try fixture.app.store.database.read { _ in try fixture.app.store.record("o1") })
      #expect(
        polled.bodyString
          == String(decoding: try JSON.encode(stored.reply(at: fixture.clock.now())), as: UTF8.self),
        "\(step)")
      #expect(fixture.app.commands.replies.entry("o1", at: Date())?.version == stored.version, "\(step)")
    }
    try await check("created")
    _ = await fixture.status("o1", #"{"status":"picking"}"#)
    try await check("picking")
    _ = await fixture.status("o1", #"{"status":"delivered"}"#)  // refused
    try await check("refused")
    _ = await fixture.status("o1", #"{"status":"onTheWay","rider":{"id":"r7","firstName":"Ana"}}"#)
    _ = await fixture.fix("o1", lat: 52.52, lng: 13.40, at: fixture.clock.now())
    try await check("fix")
    let token = String(repeating: "ab", count: 40)
    _ = try fixture.app.commands.setLiveActivityToken(token, for: "o1", correlationID: nil)
    try await check("token")
    let pushed = fixture.pushOutcome("o1", token: token, status: 200, version: 4)
    _ = try fixture.app.commands.recordPushOutcome(pushed, messageID: "p1", consumer: "t")
    try await check("pushed")
    fixture.clock.advance(by: 3600)
    try await check("stale date passed")
    _ = try fixture.app.commands.refreshLateETAs()
    try await check("late")
    // A rider assigned to it reads it from memory too; a stranger gets 404 there as well.
    #expect(await fixture.client.get("/v1/orders/o1/tracking", headers: fixture.rider()).status == 200)
    #expect(await fixture.client.get("/v1/orders/o1/tracking", headers: fixture.rider("r9")).status == 404)
  }

  @Test(arguments: TestEngine.allCases) func aLateRiderGetsAMovedRangeAndANewVersion(_ engine: TestEngine)
    async throws
  {
    let fixture = try TrackingFixture(engine: engine)
    try fixture.place("o1")
    _ = await fixture.status("o1", #"{"status":"picking"}"#)
    _ = await fixture.status("o1", #"{"status":"onTheWay","rider":{"id":"r7","firstName":"Ana"}}"#)
    _ = await fixture.fix("o1", lat: 52.535, lng: 13.41, at: fixture.clock.now())
    let before = try await fixture.tracking("o1")
    #expect(try fixture.app.commands.refreshLateETAs() == 0, "on time")
    // No news from the rider for long after the range ended.
    fixture.clock.advance(by: 3600)
    #expect(try fixture.app.commands.refreshLateETAs() == 1)
    let after = try await fixture.tracking("o1")
    #expect(after.version == before.version + 1)
    let eta = try #require(after.eta)
    #expect(eta.earliest >= fixture.clock.now())
    #expect(try fixture.updates("o1").last?.changed == [.eta])
  }
}
