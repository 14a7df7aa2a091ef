import APNsSimulator
import Foundation
import GrocerContracts
import GrocerCore
import GrocerHTTP
import Testing

@testable import NotifyGateway

/// Live Activities started by push: the start token's API, the wait for the app, the start push
/// and what the device's budget allows.
@Suite struct PushToStartTests {
  static func startToken(_ n: Int) -> String {
    String(format: "%08x", n) + String(repeating: "5a", count: 60)
  }

  func put(_ fixture: NotifyFixture, device: String, body: String, user: String = "u1") async -> HTTPResponse
  {
    var headers = fixture.headers(user)
    headers["Content-Type"] = "application/json"
    return await fixture.client.send(
      "PUT", "/v1/devices/\(device)/live-activity-start-token", headers: headers, body: body)
  }

  @Test func theStartTokenBelongsToTheCallersDevice() async throws {
    let fixture = try NotifyFixture()
    let device = NotifyFixture.deviceToken(1)
    let token = Self.startToken(1)
    #expect(
      await put(fixture, device: device, body: #"{"token":"\#(token)"}"#).status == 404, "not registered")
    try fixture.app.commands.registerDevice(device, user: "u1")
    #expect(await put(fixture, device: device, body: #"{"token":"\#(token)"}"#).status == 204)
    #expect(await put(fixture, device: device, body: #"{"token":"\#(token)"}"#, user: "u2").status == 404)
    #expect(await put(fixture, device: device, body: #"{"token":"xyz"}"#).status == 422)
    #expect(await put(fixture, device: device, body: #"{"token":"\#(token)","extra":1}"#).status == 400)
    #expect(await put(fixture, device: device, body: "{").status == 400)
    #expect(await put(fixture, device: device, body: #"{}"#).status == 400)
    #expect(await put(fixture, device: "nothex", body: #"{"token":"\#(token)"}"#).status == 422)
    let plain = await fixture.client.send(
      "PUT", "/v1/devices/\(device)/live-activity-start-token", headers: fixture.headers("u1"),
      body: #"{"token":"\#(token)"}"#)
    #expect(plain.status == 415)
    #expect(
      await fixture.client.send(
        "PUT", "/v1/devices/\(device)/live-activity-start-token", body: #"{"token":"\#(token)"}"#
      ).status == 401)
    let path = "/v1/devices/\(device)/live-activity-start-token"
    #expect(await fixture.client.send("DELETE", path, headers: fixture.headers("u2"), body: "").status == 404)
    #expect(await fixture.client.send("DELETE", path, headers: fixture.headers("u1"), body: "").status == 204)
  }

  @Test func anOrderWithoutAnActivityIsStartedByPushAfterTheWait() async throws {
    let fixture = try NotifyFixture()
    let device = NotifyFixture.deviceToken(2)
    let start = Self.startToken(2)
    try fixture.app.commands.registerDevice(device, user: "u1")
    try fixture.app.commands.setStartToken(start, device: device, user: "u1")
    try fixture.confirmed("o1")
    try fixture.update(fixture.snapshot("o1", 1, .picking), correlationID: "req-o1")
    await fixture.deliver()
    #expect(fixture.received(start).isEmpty, "the app has 20 s to start it itself")
    fixture.clock.advance(by: 21)
    await fixture.deliver()
    let pushes = fixture.received(start)
    #expect(pushes.map(\.status) == [200])
    #expect(pushes.first?.headers["apns-push-type"] == "liveactivity")
    #expect(pushes.first?.headers["apns-topic"] == "com.grocer.app.push-type.liveactivity")
    guard case .object(let root)? = pushes.first?.payload, case .object(let aps)? = root["aps"] else {
      Issue.record("no start payload")
      return
    }
    #expect(aps["event"] == .string("start"))
    #expect(aps["attributes-type"] == .string(PushPayloads.attributesType))
    #expect(aps["attributes"] == .object(["orderId": .string("o1"), "hub": .string("h1")]))
    #expect(aps["alert"] != nil && aps["stale-date"] != nil && aps["timestamp"] != nil)
    if case .object(let content)? = aps["content-state"] {
      #expect(content["status"] == .string("picking"), "the newest update waiting for the activity")
    }
    let outcome = try #require(try fixture.outcomes().last { $0.outcome.tokenKind == .pushToStart })
    #expect(outcome.type == PushEventType.delivered && outcome.outcome.event == "start")
    #expect(outcome.correlationId == "req-o1")
    // Once: the order waits no more.
    fixture.clock.advance(by: 60)
    await fixture.deliver()
    #expect(fixture.received(start).count == 1)
  }

  @Test func anActivityTheAppStartedInTimeIsNotStartedAgain() async throws {
    let fixture = try NotifyFixture()
    let device = NotifyFixture.deviceToken(3)
    let start = Self.startToken(3)
    try fixture.app.commands.registerDevice(device, user: "u1")
    try fixture.app.commands.setStartToken(start, device: device, user: "u1")
    try fixture.confirmed("o2")
    try fixture.activity("o2", token: NotifyFixture.activityToken(3))
    fixture.clock.advance(by: 21)
    await fixture.deliver()
    #expect(fixture.received(start).isEmpty)
  }

  @Test func overItsBudgetADeviceGetsAnAlertAndAGoneStartTokenIsForgotten() async throws {
    let fixture = try NotifyFixture()
    let device = NotifyFixture.deviceToken(4)
    let start = Self.startToken(4)
    try fixture.app.commands.registerDevice(device, user: "u1")
    try fixture.app.commands.setStartToken(start, device: device, user: "u1")
    for order in 1...4 {
      try fixture.confirmed("b\(order)")
      fixture.clock.advance(by: 21)
      await fixture.deliver()
    }
    #expect(fixture.received(start).map(\.status) == [200, 200, 200], "three starts an hour")
    let alerts = fixture.received(device).compactMap { push -> String? in
      guard case .object(let root) = push.payload, case .object(let aps)? = root["aps"],
        case .object(let alert)? = aps["alert"], case .string(let body)? = alert["body"]
      else { return nil }
      return body
    }
    #expect(alerts.filter { $0 == AlertText.followInApp.body }.count == 1, "\(alerts)")
    // The app was deleted: its start token answers 410 and is forgotten.
    fixture.clock.advance(by: 3600)
    fixture.app.simulator?.unregister(start)
    try fixture.confirmed("b5")
    fixture.clock.advance(by: 21)
    await fixture.deliver()
    #expect(fixture.received(start).last?.status == 410)
    let failed = try #require(try fixture.outcomes().last { $0.outcome.tokenKind == .pushToStart })
    #expect(failed.type == PushEventType.failed && failed.outcome.reason == "Unregistered")
    try fixture.confirmed("b6")
    fixture.clock.advance(by: 21)
    await fixture.deliver()
    #expect(fixture.received(start).count == 4, "no start token any more")
  }
}
