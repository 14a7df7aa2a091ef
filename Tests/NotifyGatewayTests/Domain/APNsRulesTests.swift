import APNsSimulator
import Foundation
import Testing

@testable import NotifyGateway

@Suite struct APNsRulesTests {
  static let bundle = "com.grocer.app"
  static let device = String(repeating: "ab", count: 32)
  static let activity = String(repeating: "cd", count: 80)

  func request(
    token: String = activity, type: APNsRequest.PushType = .liveactivity,
    topic: String = bundle + ".push-type.liveactivity", priority: Int = 10,
    id: String = UUID().uuidString.lowercased(),
    collapse: String? = nil, payload: [UInt8] = Array(#"{"aps":{}}"#.utf8)
  ) -> APNsRequest {
    APNsRequest(
      token: token, pushType: type, topic: topic, priority: priority, expiration: nil, id: id,
      collapseID: collapse,
      payload: payload)
  }

  @Test func whatAPNsRefusesAndWhy() {
    let cases: [(APNsRequest, Int, String)] = [
      (request(id: "not-a-uuid"), 400, "BadMessageId"),
      (request(id: UUID().uuidString), 400, "BadMessageId"),  // uppercase
      (request(priority: 7), 400, "BadPriority"),
      (request(collapse: String(repeating: "x", count: 65)), 400, "BadCollapseId"),
      (request(topic: "com.other.app"), 400, "BadTopic"),
      (request(topic: Self.bundle), 400, "DeviceTokenNotForTopic"),  // a Live Activity needs the suffix
      (request(token: Self.device), 400, "BadDeviceToken"),  // a device token is too short for one
      (request(token: "zz" + String(Self.activity.dropFirst(2))), 400, "BadDeviceToken"),
      (request(token: Self.activity, type: .alert, topic: Self.bundle), 400, "BadDeviceToken"),
      (request(payload: []), 400, "PayloadEmpty"),
      (request(payload: Array(repeating: 0x20, count: 4097)), 413, "PayloadTooLarge"),
    ]
    for (request, status, reason) in cases {
      let refusal = APNsRules.check(request, bundleID: Self.bundle)
      #expect(refusal?.status == status, "\(reason)")
      #expect(refusal?.reason == reason)
    }
    #expect(APNsRules.check(request(), bundleID: Self.bundle) == nil)
    #expect(
      APNsRules.check(request(token: Self.device, type: .alert, topic: Self.bundle), bundleID: Self.bundle)
        == nil)
    #expect(
      APNsRules.check(request(payload: Array(repeating: 0x20, count: 4096)), bundleID: Self.bundle) == nil)
  }

  @Test func whatToDoWithEachAnswer() {
    #expect(APNsResponse(status: 200).disposition == .delivered)
    #expect(APNsResponse(status: 410, reason: "Unregistered").disposition == .removeToken)
    #expect(APNsResponse(status: 400, reason: "BadDeviceToken").disposition == .removeToken)
    #expect(APNsResponse(status: 400, reason: "BadTopic").disposition == .failed)
    #expect(APNsResponse(status: 403, reason: "ExpiredProviderToken").disposition == .failed)
    #expect(APNsResponse(status: 413, reason: "PayloadTooLarge").disposition == .failed)
    for status in [429, 500, 503] { #expect(APNsResponse(status: status).disposition == .retry) }
  }

  @Test func theSimulatorAnswersLikeAPNsAndRecords() async throws {
    var options = APNsSimulator.Options(bundleID: Self.bundle)
    options.perTokenBurst = 3
    let simulator = APNsSimulator(options: options)
    for _ in 0..<3 { #expect(try await simulator.send(request()).status == 200) }
    let throttled = try await simulator.send(request())
    #expect(throttled.status == 429)
    #expect(throttled.reason == "TooManyRequests")
    simulator.unregister(Self.device)
    let gone = try await simulator.send(request(token: Self.device, type: .alert, topic: Self.bundle))
    #expect(gone.status == 410)
    #expect(gone.timestamp != nil)
    let received = try simulator.received(by: Self.activity)
    #expect(received.map(\.status) == [200, 200, 200, 429])
    #expect(received.first?.headers["apns-push-type"] == "liveactivity")
    #expect(received.first?.payload == .object(["aps": .object([:])]))
  }
}
