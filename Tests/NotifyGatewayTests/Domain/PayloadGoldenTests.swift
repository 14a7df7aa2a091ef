import APNsSimulator
import Foundation
import GrocerContracts
import Testing

@testable import NotifyGateway

/// The exact bytes of each kind of push, against files in `Golden/` (regenerate one by deleting
/// it and running the test, then read the new file before committing it).
@Suite struct PayloadGoldenTests {
  static let generatedAt = Date(timeIntervalSince1970: 1_792_521_480)

  static func snapshot(_ status: TrackingStatus, rider: String? = "Ana") -> TrackingSnapshot {
    TrackingSnapshot(
      orderId: "ord_8F3K", version: 7, status: status, problem: status == .cancelled ? "Out of stock" : nil,
      eta: status.isTerminal
        ? nil : ETARange(earliest: generatedAt + 240, latest: generatedAt + 480),
      rider: rider.map { RiderView(firstName: $0, lat: 52.52, lng: 13.40, recordedAt: generatedAt - 5) },
      destination: GeoPoint(lat: 52.53, lng: 13.41), generatedAt: generatedAt)
  }

  static let cases: [(String, [UInt8])] = [
    ("liveactivity-update.json", PushPayloads.liveActivity(snapshot(.onTheWay), event: .update, alert: nil)),
    (
      "liveactivity-arriving.json",
      PushPayloads.liveActivity(
        snapshot(.arriving), event: .update, alert: AlertText.stage(snapshot(.arriving)))
    ),
    (
      "liveactivity-end.json",
      PushPayloads.liveActivity(
        snapshot(.delivered), event: .end, alert: AlertText.stage(snapshot(.delivered)))
    ),
    (
      "liveactivity-start.json",
      PushPayloads.liveActivityStart(
        LiveActivityContent(snapshot(.picking)), orderId: "ord_8F3K", hub: "h1", alert: .orderConfirmed,
        timestamp: 1_792_521_480, relevance: LiveActivityRelevance.score(snapshot(.picking)))
    ),
    (
      "broadcast-notice.json",
      PushPayloads.hubNotice(
        HubNotice(
          noticeId: "ntc_1", hub: "h1", title: "Rain delay", body: "Riders are a little slower in the rain.",
          postedAt: generatedAt, expiresAt: generatedAt + 3600), timestamp: 1_792_521_480)
    ),
    ("background-delivered.json", PushPayloads.refresh(orderId: "ord_8F3K", status: "delivered")),
    (
      "alert-confirmed.json",
      PushPayloads.alert(
        AlertText(title: "Order confirmed", body: "We're packing your order."), orderId: "ord_8F3K")
    ),
  ]

  static let folder = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
    .appendingPathComponent("Golden")

  @Test(arguments: cases.map(\.0))
  func payloadMatchesItsGoldenFile(name: String) throws {
    let bytes = try #require(Self.cases.first { $0.0 == name }?.1)
    #expect(bytes.count <= APNsRules.maximumPayload)
    let url = Self.folder.appendingPathComponent(name)
    guard FileManager.default.fileExists(atPath: url.path) else {
      try Data(bytes + [0x0A]).write(to: url)
      Issue.record("\(name) was missing and is written now: read it, then commit it")
      return
    }
    let golden = try String(contentsOf: url, encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)
    #expect(String(decoding: bytes, as: UTF8.self) == golden)
  }

  @Test func theBiggestCardStillFitsAndItsRequestPassesAPNsRules() {
    var snapshot = Self.snapshot(.cancelled, rider: String(repeating: "N", count: 300))
    snapshot.problem = String(repeating: "é", count: 500)
    let payload = PushPayloads.liveActivity(snapshot, event: .end, alert: AlertText.stage(snapshot))
    #expect(payload.count <= APNsRules.maximumPayload)
    let request = APNsRequest(
      token: String(repeating: "a", count: 160), pushType: .liveactivity,
      topic: "com.grocer.app.push-type.liveactivity",
      priority: 10, expiration: Self.generatedAt + 600, id: UUID().uuidString.lowercased(), payload: payload)
    #expect(APNsRules.check(request, bundleID: "com.grocer.app") == nil)
    #expect(request.headers["apns-expiration"] == "1792522080")
  }
}
