import APNsSimulator
import Foundation
import GrocerAuth
import GrocerCore
import GrocerTestSupport
import Testing

@testable import NotifyGateway

/// The simulator as a client none of our code is in sees it: `Tests/outside/apns_client.py`
/// (Debian's python3-h2, as aioapns-style provider libraries speak to APNs) over nginx's TLS and
/// HTTP/2 front, one stream per request, for each of Apple's documented answers.
@Suite(.serialized) struct OutsideAPNsClientTests {
  static let script = TestBroker.repositoryRoot.appendingPathComponent("Tests/outside/apns_client.py").path

  @Test func eachOfApplesDocumentedAnswersReachesAnOutsideClient() async throws {
    try await APNsStack.run(perTokenBurst: 3) { stack in
      func bearer(_ key: ES256Key, _ clock: ManualClock) throws -> String {
        try APNsProviderToken(key: key, keyID: APNsStack.keyID, teamID: APNsStack.teamID, clock: clock)
          .authorizationHeaderValue()
      }
      let good = try bearer(stack.key, stack.providerClock)
      let invalid = try bearer(try ES256Key.generate(), stack.providerClock)
      let expired = try bearer(stack.key, ManualClock(stack.apnsClock.now() - 2 * 3600))
      let device = APNsStack.deviceToken(1)
      let gone = APNsStack.deviceToken(2)
      stack.simulator.unregister(gone)
      let busy = APNsStack.deviceToken(3)
      let activity = String(repeating: "ab", count: 40)
      let bundle = APNsStack.bundle
      func push(
        _ name: String, token: String = device, path: String? = nil, method: String = "POST",
        headers changes: [String: String?] = [:], body: String = #"{"aps":{"alert":"Hi"}}"#,
        repeat count: Int = 1
      ) -> [String: Any] {
        var headers: [String: String] = [
          "authorization": good, "apns-push-type": "alert", "apns-topic": bundle, "apns-priority": "10",
          "apns-id": UUID().uuidString.lowercased(),
        ]
        for (name, value) in changes { headers[name] = value }
        return [
          "name": name, "method": method, "path": path ?? "/3/device/\(token)", "headers": headers,
          "body": body,
          "body_repeat": count,
        ]
      }
      let cases: [[String: Any]] =
        [
          push("ok"),
          push("BadDeviceToken", token: "abc"),
          push("MissingTopic", headers: ["apns-topic": nil]),
          push("BadTopic", headers: ["apns-topic": "com.other.app"]),
          push("DeviceTokenNotForTopic", token: activity, headers: ["apns-push-type": "liveactivity"]),
          push("BadPriority", headers: ["apns-priority": "7"]),
          push("BadMessageId", headers: ["apns-id": "not-a-uuid"]),
          push("BadExpirationDate", headers: ["apns-expiration": "-1"]),
          push("InvalidPushType", headers: ["apns-push-type": "sms"]),
          push("PayloadEmpty", body: ""),
          push("PayloadTooLarge", body: "x", repeat: 5000),
          push("BadCollapseId", headers: ["apns-collapse-id": String(repeating: "c", count: 65)]),
          push("Unregistered", token: gone),
          push("MissingDeviceToken", path: "/3/device"),
          push("MethodNotAllowed", method: "GET", body: ""),
          push("BadPath", path: "/4/nothing"),
          push("MissingProviderToken", headers: ["authorization": nil]),
          push("InvalidProviderToken", headers: ["authorization": invalid]),
          push("ExpiredProviderToken", headers: ["authorization": expired]),
          push("backgroundAtTen", headers: ["apns-push-type": "background", "apns-priority": "10"]),
          push("backgroundAtFive", headers: ["apns-push-type": "background", "apns-priority": "5"]),
        ] + (1...4).map { push("busy\($0)", token: busy) }
      let file = FileManager.default.temporaryDirectory.appendingPathComponent("apns-cases-\(UUID()).json")
      try JSONSerialization.data(withJSONObject: cases).write(to: file)
      defer { try? FileManager.default.removeItem(at: file) }
      let output = try await Self.run([
        Self.script, "localhost", String(stack.front.port), stack.front.certificatePath, file.path,
      ])
      let results = try #require(
        try JSONSerialization.jsonObject(with: Data(output.utf8)) as? [String: [String: Any]], "\(output)")
      func answer(_ name: String) -> (Int?, String?) {
        (results[name]?["status"] as? Int, results[name]?["reason"] as? String)
      }
      #expect(answer("ok") == (200, nil))
      for (name, status) in [
        ("BadDeviceToken", 400), ("MissingTopic", 400), ("BadTopic", 400), ("DeviceTokenNotForTopic", 400),
        ("BadPriority", 400), ("BadMessageId", 400), ("BadExpirationDate", 400), ("InvalidPushType", 400),
        ("PayloadEmpty", 400), ("PayloadTooLarge", 413), ("BadCollapseId", 400), ("Unregistered", 410),
        ("MissingDeviceToken", 400), ("MethodNotAllowed", 405), ("BadPath", 404),
        ("MissingProviderToken", 403),
        ("InvalidProviderToken", 403), ("ExpiredProviderToken", 403),
      ] {
        #expect(answer(name) == (status, name), "\(name): \(results[name] ?? [:])")
      }
      #expect(results["Unregistered"]?["timestamp"] is Int, "410 carries when the token stopped, in ms")
      #expect(answer("backgroundAtTen") == (400, "BadPriority") && answer("backgroundAtFive") == (200, nil))
      #expect((1...4).map { answer("busy\($0)").0 } == [200, 200, 200, 429])
      #expect(answer("busy4").1 == "TooManyRequests")
      #expect(results["ok"]?["apns_id"] as? String == (cases[0]["headers"] as? [String: String])?["apns-id"])
    }
  }

  /// Runs /usr/bin/python3 with `arguments`; its standard output.
  static func run(_ arguments: [String]) async throws -> String {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/usr/bin/python3")
    process.arguments = arguments
    let output = Pipe()
    process.standardOutput = output
    return try await withCheckedThrowingContinuation { continuation in
      process.terminationHandler = { _ in
        let data = output.fileHandleForReading.readDataToEndOfFile()
        continuation.resume(returning: String(decoding: data, as: UTF8.self))
      }
      do { try process.run() } catch { continuation.resume(throwing: error) }
    }
  }
}
