import APNsSimulator
import Foundation
import GrocerContracts
import GrocerCore
import GrocerHTTP
import Testing

@testable import NotifyGateway

/// From a pending update to what the device shows, through the real engine and the simulator.
@Suite struct DeliveryTests {
  @Test func anOrdersJourneyReachesTheCardInOrderAndEndsOnce() async throws {
    let fixture = try NotifyFixture()
    let token = NotifyFixture.activityToken(1)
    try fixture.activity("o1", token: token)
    for (version, status) in [
      (1, TrackingStatus.placed), (2, .picking), (3, .onTheWay), (4, .arriving), (5, .delivered),
    ] {
      try fixture.update(fixture.snapshot("o1", Int64(version), status), correlationID: "req-\(version)")
      await fixture.deliver()
    }
    // Nothing after the end.
    try fixture.update(fixture.snapshot("o1", 6, .delivered))
    await fixture.deliver()
    let pushes = fixture.received(token)
    #expect(pushes.map(\.status) == [200, 200, 200, 200, 200])
    #expect(pushes.map { $0.headers["apns-priority"] } == ["10", "10", "10", "10", "10"])
    #expect(pushes.allSatisfy { $0.headers["apns-topic"] == "com.grocer.app.push-type.liveactivity" })
    #expect(pushes.allSatisfy { $0.headers["apns-push-type"] == "liveactivity" })
    func aps(_ push: APNsSimulator.Received) -> [String: JSONValue] {
      guard case .object(let root) = push.payload, case .object(let aps)? = root["aps"] else { return [:] }
      return aps
    }
    #expect(
      pushes.map { aps($0)["event"] } == [
        .string("update"), .string("update"), .string("update"), .string("update"), .string("end"),
      ])
    let timestamps = pushes.compactMap { push -> Double? in
      if case .number(let value)? = aps(push)["timestamp"] { return value }
      return nil
    }
    #expect(
      timestamps == timestamps.sorted() && Set(timestamps).count == timestamps.count, "strictly increasing")
    #expect(aps(pushes[4])["dismissal-date"] != nil)
    #expect(try fixture.app.store.activity("o1")?.state.ended == true)
    #expect(try fixture.app.store.pendingCount() == 0)
    // Each push's outcome is published, with what the device was sent.
    let outcomes = try fixture.outcomes()
    #expect(outcomes.map(\.type) == Array(repeating: PushEventType.delivered, count: 5))
    #expect(outcomes.map(\.outcome.version) == [1, 2, 3, 4, 5])
    #expect(
      outcomes.map(\.correlationId) == ["req-1", "req-2", "req-3", "req-4", "req-5"], "what caused each")
    #expect(outcomes.map(\.outcome.event) == ["update", "update", "update", "update", "end"])
    #expect(outcomes.map(\.outcome.pushId) == pushes.map { $0.headers["apns-id"] ?? "" })
    for (outcome, timestamp) in zip(outcomes.map(\.outcome), timestamps) {
      #expect(outcome.tokenKind == .liveActivity && outcome.token == token && outcome.orderId == "o1")
      #expect(outcome.userId == "u1" && outcome.pushType == "liveactivity" && outcome.priority == 10)
      #expect(outcome.status == 200 && outcome.reason == nil && outcome.latencyMs >= 0)
      let stale = outcome.event == "update" ? Date(timeIntervalSince1970: timestamp + 180) : nil
      #expect(outcome.staleDate == stale)
    }
  }

  @Test func onlyTheNewestPendingUpdateIsSentOlderOnesAreCoalesced() async throws {
    let fixture = try NotifyFixture()
    let token = NotifyFixture.activityToken(2)
    // Updates arrive before the app registered the activity's token.
    #expect(try fixture.update(fixture.snapshot("o2", 1, .placed)) == .queued)
    #expect(try fixture.update(fixture.snapshot("o2", 2, .picking)) == .coalesced)
    #expect(
      try fixture.update(fixture.snapshot("o2", 1, .placed), id: "late") == .stale,
      "an older one arriving late")
    await fixture.deliver()
    #expect(fixture.received(token).isEmpty, "no token yet")
    try fixture.activity("o2", token: token)
    await fixture.deliver()
    let pushes = fixture.received(token)
    #expect(pushes.count == 1)
    #expect(
      pushes.first.map { String(describing: $0.payload) }?.contains("picking") == true,
      "the newest, not the first")
    #expect(try fixture.update(fixture.snapshot("o2", 2, .picking)) == .duplicate, "same message again")
  }

  @Test func overBudgetStageChangesGoAtPriorityFiveAndAreCounted() async throws {
    let fixture = try NotifyFixture(budget: 2)
    let token = NotifyFixture.activityToken(3)
    try fixture.activity("o3", token: token)
    for (version, status) in [(1, TrackingStatus.placed), (2, .picking), (3, .problem), (4, .picking)] {
      try fixture.update(fixture.snapshot("o3", Int64(version), status))
      await fixture.deliver()
    }
    #expect(fixture.received(token).map { $0.headers["apns-priority"] } == ["10", "10", "5", "5"])
    #expect(fixture.app.metrics.render().contains("push_downgrades_total 2"))
  }

  @Test func aDeadTokenIsForgottenAndNeverRetried() async throws {
    let fixture = try NotifyFixture()
    let token = NotifyFixture.activityToken(4)
    try fixture.activity("o4", token: token)
    fixture.app.simulator?.unregister(token)
    try fixture.update(fixture.snapshot("o4", 1, .placed))
    await fixture.deliver()
    #expect(fixture.received(token).map(\.status) == [410])
    #expect(try fixture.app.store.activity("o4")?.token == nil)
    let failed = try fixture.outcomes()
    #expect(failed.map(\.type) == [PushEventType.failed])
    #expect(failed.first?.outcome.status == 410 && failed.first?.outcome.reason == "Unregistered")
    #expect(failed.first?.outcome.tokenIsGone == true && failed.first?.outcome.staleDate == nil)
    // A new token (the app started the activity again) gets the pending update.
    let fresh = NotifyFixture.activityToken(5)
    try fixture.activity("o4", token: fresh, sequence: 2)
    await fixture.deliver()
    #expect(fixture.received(fresh).map(\.status) == [200])
  }

  @Test func a429StormBacksOffAndRecoversWithinTheExpiration() async throws {
    let transport = ScriptedTransport()
    transport.script.withLock {
      $0 = Array(repeating: APNsResponse(status: 429, reason: "TooManyRequests"), count: 4)
    }
    let fixture = try NotifyFixture(transport: transport)
    try fixture.activity("o6", token: NotifyFixture.activityToken(6))
    try fixture.update(fixture.snapshot("o6", 1, .placed))
    var attempts: [Int] = []
    for _ in 0..<6 {
      await fixture.deliver()
      attempts.append(transport.sent.withLock { $0.count })
      fixture.clock.advance(by: 31)  // past any backoff
    }
    #expect(attempts == [1, 2, 3, 4, 5, 5], "one try per backoff, then delivered and done")
    let outcomes = try fixture.outcomes()
    #expect(outcomes.map(\.type) == [PushEventType.delivered], "retries are not outcomes; the answer is")
    #expect(try fixture.app.store.pendingCount() == 0)
    #expect(try fixture.app.store.activity("o6")?.state.lastVersion == 1)
  }

  @Test func nothingIsRetriedPastItsExpiration() async throws {
    let transport = ScriptedTransport()
    transport.script.withLock {
      $0 = Array(repeating: APNsResponse(status: 503, reason: "ServiceUnavailable"), count: 100)
    }
    let fixture = try NotifyFixture(transport: transport)
    try fixture.activity("o7", token: NotifyFixture.activityToken(7))
    try fixture.update(fixture.snapshot("o7", 1, .placed))
    for _ in 0..<40 {
      await fixture.deliver()
      fixture.clock.advance(by: 31)
    }
    let sent = transport.sent.withLock { $0.count }
    #expect(sent > 3 && sent <= 22, "retried, at most every 30 s within the 600 s lifetime: \(sent)")
    #expect(try fixture.app.store.pendingCount() == 0, "dropped once expired")
    #expect(fixture.app.metrics.render().contains("push_dropped_total 1"))
    let failed = try fixture.outcomes()
    #expect(failed.map(\.type) == [PushEventType.failed], "given up once")
    #expect(failed.first.map { $0.outcome.status == 503 || $0.outcome.reason == "Expired" } == true)
  }

  @Test func alertsGoToEveryDeviceOfTheUserAndDevicesAreTheirs() async throws {
    let fixture = try NotifyFixture()
    let (a, b) = (NotifyFixture.deviceToken(1), NotifyFixture.deviceToken(2))
    for token in [a, b] {
      #expect(
        await fixture.client.send("PUT", "/v1/devices/\(token)", headers: fixture.headers("u1"), body: "")
          .status == 204)
    }
    #expect(
      await fixture.client.send("PUT", "/v1/devices/nothex", headers: fixture.headers("u1"), body: "").status
        == 422)
    #expect(await fixture.client.send("PUT", "/v1/devices/\(a)", body: "").status == 401)
    #expect(
      await fixture.client.send("DELETE", "/v1/devices/\(b)", headers: fixture.headers("u2"), body: "").status
        == 404)
    try fixture.app.commands.queueAlert(
      AlertText(title: "Order confirmed", body: "We're packing your order."), user: "u1", orderId: "o8",
      occurredAt: fixture.clock.now(), messageID: "m-o8", consumer: fixture.consumer)
    await fixture.deliver()
    for token in [a, b] {
      let pushes = fixture.received(token)
      #expect(pushes.map(\.status) == [200])
      #expect(pushes.first?.headers["apns-push-type"] == "alert")
      #expect(pushes.first?.headers["apns-topic"] == "com.grocer.app")
    }
    // A device unregistered at APNs is forgotten.
    fixture.app.simulator?.unregister(a)
    try fixture.app.commands.queueAlert(
      AlertText(title: "Payment declined", body: "No."), user: "u1", orderId: "o9",
      occurredAt: fixture.clock.now(),
      messageID: "m-o9", consumer: fixture.consumer)
    await fixture.deliver()
    #expect(try fixture.app.store.devices(of: "u1") == [b])
    let alerts = try fixture.outcomes()
    #expect(
      alerts.map(\.type).sorted() == [
        PushEventType.delivered, PushEventType.delivered, PushEventType.delivered, PushEventType.failed,
      ])
    #expect(alerts.allSatisfy { $0.outcome.tokenKind == .device && $0.outcome.pushType == "alert" })
    #expect(alerts.filter { $0.type == PushEventType.failed }.map(\.outcome.token) == [a])
    #expect(alerts.filter { $0.outcome.orderId == "o9" }.count == 2)
    // The simulator's record is for operators (staff), not customers.
    #expect(await fixture.client.get("/v1/sim/devices/\(b)", headers: fixture.headers("u1")).status == 403)
    let record = await fixture.client.get(
      "/v1/sim/devices/\(b)", headers: fixture.headers("ops", role: .staff))
    #expect(record.status == 200)
    #expect(record.bodyString.contains("Payment declined"))
  }

  /// A finished order refreshes the app on each of the customer's devices with a background push,
  /// as APNs wants one (push type `background`, priority 5, `content-available`, nothing shown),
  /// beside the activity's end; each has its outcome event.
  @Test func aFinishedOrderRefreshesEveryDeviceInTheBackground() async throws {
    let fixture = try NotifyFixture()
    let (device, activity) = (NotifyFixture.deviceToken(3), NotifyFixture.activityToken(3))
    try fixture.app.commands.registerDevice(device, user: "u1")
    try fixture.activity("o3", token: activity)
    try fixture.update(fixture.snapshot("o3", 1, .onTheWay))
    await fixture.deliver()
    try fixture.update(fixture.snapshot("o3", 2, .delivered))
    await fixture.deliver()
    let pushes = fixture.received(device)
    #expect(pushes.map(\.status) == [200])
    #expect(pushes.first?.headers["apns-push-type"] == "background")
    #expect(pushes.first?.headers["apns-priority"] == "5")
    #expect(pushes.first?.headers["apns-topic"] == "com.grocer.app")
    let payload = pushes.first?.payload
    #expect(payload?["aps"]?["content-available"] == .number(1))
    #expect(payload?["orderId"] == .string("o3"))
    #expect(payload?["status"] == .string("delivered"))
    #expect(fixture.received(activity).count == 2, "the card's update and its end")
    let refresh = try fixture.outcomes().filter { $0.outcome.pushType == "background" }
    #expect(refresh.map(\.type) == [PushEventType.delivered])
    #expect(refresh.first?.outcome.tokenKind == .device)
    #expect(refresh.first?.outcome.priority == 5)
  }

  /// An activity left without updates near its eight hours is ended with what it shows and a
  /// word that the order is still being handled; the order's next news reaches the devices.
  @Test func nearItsEightHoursAnActivityIsEndedAndTheNewsGoesOnAsAlerts() async throws {
    let fixture = try NotifyFixture()
    let token = NotifyFixture.activityToken(9)
    let device = NotifyFixture.deviceToken(9)
    try fixture.app.commands.registerDevice(device, user: "u1")
    try fixture.activity("o9", token: token)
    try fixture.update(fixture.snapshot("o9", 1, .picking))
    await fixture.deliver()
    fixture.clock.advance(by: 7 * 3600 + 30 * 60)
    await fixture.deliver()
    #expect(fixture.received(token).count == 1, "not yet: half an hour left")
    fixture.clock.advance(by: 16 * 60)
    await fixture.deliver()
    let pushes = fixture.received(token)
    #expect(pushes.map(\.status) == [200, 200])
    guard case .object(let root)? = pushes.last?.payload, case .object(let aps)? = root["aps"] else {
      Issue.record("no end push")
      return
    }
    #expect(aps["event"] == .string("end"))
    #expect(
      aps["alert"]
        == .object(["title": .string("Still on it"), "body": .string(AlertText.stillHandled.body)]))
    if case .object(let content)? = aps["content-state"] { #expect(content["status"] == .string("picking")) }
    #expect(try fixture.app.store.activity("o9")?.state.ended == true)
    #expect(
      try fixture.outcomes().last.map { $0.type == PushEventType.delivered && $0.outcome.event == "end" }
        == true)
    // The next stage goes to the device as an alert, not to the ended card.
    try fixture.update(fixture.snapshot("o9", 2, .onTheWay))
    await fixture.deliver()
    #expect(fixture.received(token).count == 2)
    #expect(fixture.received(device).map(\.status) == [200])
    #expect(
      fixture.received(device).first.map { String(describing: $0.payload).contains("On its way") } == true)
    // Swept again later: nothing more.
    fixture.clock.advance(by: 60)
    await fixture.deliver()
    #expect(fixture.received(token).count == 2)
  }
}
