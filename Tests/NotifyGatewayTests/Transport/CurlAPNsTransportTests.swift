import APNsSimulator
import Foundation
import GrocerAuth
import GrocerCore
import GrocerHTTPClient
import Testing

@testable import NotifyGateway

/// The real transport (libcurl HTTP/2 over TLS, ES256 provider tokens) against the simulator
/// served as APNs behind nginx.
@Suite(.serialized) struct CurlAPNsTransportTests {
  @Test func anAcceptedPushAnswers200WithItsApnsIDWhichTheSimulatorRecords() async throws {
    try await APNsStack.run { stack in
      let transport = try await stack.transport()
      let token = APNsStack.deviceToken(1)
      let request = APNsStack.alert(token)
      let response = try await transport.send(request)
      #expect(response == APNsResponse(status: 200, id: request.id))
      let received = try stack.simulator.received(by: token)
      #expect(received.count == 1)
      #expect(received.first?.status == 200)
      #expect(received.first?.headers["apns-id"] == request.id)
      #expect(received.first?.headers["apns-topic"] == APNsStack.bundle)
      #expect(received.first?.payload == .object(["aps": .object(["alert": .string("Hello")])]))
    }
  }

  @Test func refusalsComeBackWithAPNsReasons() async throws {
    try await APNsStack.run { stack in
      let transport = try await stack.transport()
      let badToken = try await transport.send(APNsStack.alert("not-a-token"))
      #expect(badToken.status == 400)
      #expect(badToken.reason == "BadDeviceToken")
      #expect(badToken.disposition == .removeToken)

      let large = APNsStack.alert(
        APNsStack.deviceToken(2),
        payload: Array(#"{"aps":{"alert":""#.utf8) + Array(repeating: UInt8(ascii: "x"), count: 5000)
          + Array(#""}}"#.utf8))
      let tooLarge = try await transport.send(large)
      #expect(tooLarge.status == 413)
      #expect(tooLarge.reason == "PayloadTooLarge")
      #expect(tooLarge.id == large.id)
    }
  }

  @Test func anUnregisteredTokenAnswers410WithTheTimestampAPNsGave() async throws {
    try await APNsStack.run { stack in
      let transport = try await stack.transport()
      let token = APNsStack.deviceToken(3)
      stack.apnsClock.advance(by: 12.345)
      stack.simulator.unregister(token)
      let unregisteredAt = stack.apnsClock.now()
      stack.apnsClock.advance(by: 60)
      let response = try await transport.send(APNsStack.alert(token))
      #expect(response.status == 410)
      #expect(response.reason == "Unregistered")
      let timestamp = try #require(response.timestamp)
      // APNs gives milliseconds.
      #expect(abs(timestamp.timeIntervalSince(unregisteredAt)) < 0.001)
      #expect(response.disposition == .removeToken)
    }
  }

  @Test func theTransportsTokenIsAcceptedAndOneFromAnotherKeyIsNot() async throws {
    try await APNsStack.run { stack in
      let trusted = try await stack.transport()
      let token = APNsStack.deviceToken(4)
      #expect(try await trusted.send(APNsStack.alert(token)).status == 200)
      let jwt = trusted.providerToken.current()
      guard case .accepted(let keyID, _) = stack.verifier.check(authorizationHeader: "bearer " + jwt) else {
        Issue.record("the transport's JWT does not verify")
        return
      }
      #expect(keyID == APNsStack.keyID)

      let impostor = try await stack.transport(key: try ES256Key.generate())
      let refused = try await impostor.send(APNsStack.alert(token))
      #expect(refused.status == 403)
      #expect(refused.reason == "InvalidProviderToken")
      #expect(refused.disposition == .failed)
      #expect(try stack.simulator.received(by: token).count == 1, "a refused token reaches no device")
    }
  }

  @Test func anExpiredTokenIsRefusedAndReplacedOnTheNextPush() async throws {
    try await APNsStack.run { stack in
      let transport = try await stack.transport()
      let token = APNsStack.deviceToken(5)
      #expect(try await transport.send(APNsStack.alert(token)).status == 200)
      let firstIssued = try #require(transport.providerToken.issuedAt)
      // APNs's clock runs past the hour while ours says the token is 25 minutes old (skew, or
      // a suspended process): APNs refuses it as expired.
      stack.apnsClock.advance(by: 3700)
      stack.providerClock.advance(by: 25 * 60)
      let refused = try await transport.send(APNsStack.alert(token))
      #expect(refused.status == 403)
      #expect(refused.reason == "ExpiredProviderToken")
      #expect(transport.providerToken.issuedAt == nil, "invalidated")
      #expect(try await transport.send(APNsStack.alert(token)).status == 200)
      let renewed = try #require(transport.providerToken.issuedAt)
      #expect(renewed == firstIssued + 25 * 60)
    }
  }

  @Test func anExpiredAnswerDoesNotReplaceATokenYoungerThanTwentyMinutes() async throws {
    try await APNsStack.run { stack in
      let transport = try await stack.transport()
      let token = APNsStack.deviceToken(6)
      #expect(try await transport.send(APNsStack.alert(token)).status == 200)
      let issued = transport.providerToken.issuedAt
      stack.apnsClock.advance(by: 3700)
      stack.providerClock.advance(by: 5 * 60)
      #expect(try await transport.send(APNsStack.alert(token)).reason == "ExpiredProviderToken")
      // Replacing it now would earn 429 TooManyProviderTokenUpdates from APNs.
      #expect(transport.providerToken.issuedAt == issued)
    }
  }

  @Test func manyConcurrentPushesShareOneOrTwoHTTP2Connections() async throws {
    try await APNsStack.run { stack in
      let transport = try await stack.transport()
      let statuses = try await withThrowingTaskGroup(of: Int.self) { group in
        for n in 0..<400 {
          group.addTask {
            try await transport.send(APNsStack.alert(APNsStack.deviceToken(100 + n % 50))).status
          }
        }
        return try await group.reduce(into: [Int]()) { $0.append($1) }
      }
      #expect(statuses.count == 400)
      #expect(statuses.allSatisfy { $0 == 200 })
      #expect(transport.client.connectionsOpened <= 2)
      #expect(transport.client.connectionsOpened >= 1)
      let direct = try await transport.client.send(
        HTTPClientRequest(method: "GET", path: "/v1/sim/devices/" + APNsStack.deviceToken(100)))
      #expect(direct.version == .http2)
      #expect(direct.status == 200)
    }
  }

  @Test func headersAreReadWithAPNsDefaultsAndRefusals() async throws {
    try await APNsStack.run { stack in
      let transport = try await stack.transport()
      let token = APNsStack.deviceToken(7)
      let payload = Array(#"{"aps":{"alert":"Hi"}}"#.utf8)
      let authorization = ("authorization", transport.providerToken.authorizationHeaderValue())
      func post(_ headers: [(String, String)], auth: Bool = true) async throws -> HTTPClientResponse {
        try await transport.client.send(
          HTTPClientRequest(
            method: "POST", path: "/3/device/" + token, headers: headers + (auth ? [authorization] : []),
            body: payload))
      }
      let base = [("apns-push-type", "alert"), ("apns-topic", APNsStack.bundle)]

      // No apns-id: APNs makes one; no priority: 10; no expiration.
      let plain = try await post(base)
      #expect(plain.status == 200)
      #expect(plain.body.isEmpty)
      let generated = try #require(plain.header("apns-id"))
      #expect(UUID(uuidString: generated) != nil && generated == generated.lowercased())
      let record = try #require(stack.simulator.received(by: token).last)
      #expect(record.headers["apns-id"] == generated)
      #expect(record.headers["apns-priority"] == "10")
      #expect(record.headers["apns-expiration"] == "0")

      func reason(_ response: HTTPClientResponse) -> String? {
        CurlAPNsTransport.response(response, requestID: "")?.reason
      }
      let noType = try await post([("apns-topic", APNsStack.bundle)])
      #expect(noType.status == 400)
      #expect(reason(noType) == "InvalidPushType")
      #expect(noType.header("apns-id") != nil, "apns-id on every answer")
      #expect(
        reason(try await post([("apns-push-type", "voip"), ("apns-topic", APNsStack.bundle)]))
          == "InvalidPushType")
      #expect(reason(try await post([("apns-push-type", "alert")])) == "MissingTopic")
      #expect(reason(try await post(base + [("apns-priority", "high")])) == "BadPriority")
      #expect(reason(try await post(base + [("apns-expiration", "soon")])) == "BadExpirationDate")
      let missing = try await post(base, auth: false)
      #expect(missing.status == 403)
      #expect(reason(missing) == "MissingProviderToken")
      let bodyText = missing.bodyString
      #expect(bodyText == #"{"reason":"MissingProviderToken"}"#)
    }
  }
}
