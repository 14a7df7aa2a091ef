import APNsSimulator
import Foundation
import GrocerAuth
import GrocerCore
import GrocerHTTP
import GrocerHTTPTesting
import GrocerRuntime
import Testing

/// The simulator's HTTP face in-process (no sockets): Apple's answers for a bad path, another
/// method, a missing token and an unregistered one, Apple's rules for background pushes, and the
/// operator's record and unregister endpoints behind staff tokens.
@Suite struct APNsSimulatorRoutesTests {
  static let bundle = "com.grocer.app"
  static let secret = "sim-routes-secret"

  struct World {
    let client: TestClient
    let simulator: APNsSimulator
    let provider: APNsProviderToken
    let clock: ManualClock

    func staff() -> [String: String] {
      let token = HS256Signer(secret: APNsSimulatorRoutesTests.secret).sign(
        claims: TokenClaims(
          subject: "ops", role: .staff, hubs: ["*"], issuedAt: clock.now(), expiresAt: clock.now() + 600))
      return ["Authorization": "Bearer " + token]
    }

    func push(_ token: String, type: String = "alert", priority: String? = nil, payload: String) async
      -> HTTPResponse
    {
      var headers = [
        "authorization": provider.authorizationHeaderValue(), "apns-push-type": type,
        "apns-topic": APNsSimulatorRoutesTests.bundle,
      ]
      if let priority { headers["apns-priority"] = priority }
      return await client.send("POST", "/3/device/" + token, headers: headers, body: payload)
    }
  }

  static func world() throws -> World {
    let clock = ManualClock()
    let key = try ES256Key.generate()
    let simulator = APNsSimulator(options: .init(bundleID: bundle), clock: clock)
    let verifier = APNsProviderTokenVerifier(
      keys: ["KEY1234567": key.publicKey], teamID: "TEAM123456", clock: clock)
    var router = Router(
      verifier: HS256Verifier(secret: secret, clock: clock), metrics: MetricsRegistry(), logger: .discarding()
    )
    router.add(APNsSimulatorRoutes(simulator: simulator, verifier: verifier).routes)
    let provider = try APNsProviderToken(key: key, keyID: "KEY1234567", teamID: "TEAM123456", clock: clock)
    return World(
      client: TestClient(APNsPathResponder(router: router)), simulator: simulator, provider: provider,
      clock: clock)
  }

  static func reason(_ response: HTTPResponse) -> String? {
    (try? JSON.decode([String: JSONValue].self, from: Data(response.body)))?["reason"].flatMap {
      if case .string(let text) = $0 { text } else { nil }
    }
  }

  static let device = String(repeating: "ab", count: 32)

  @Test func badPathsMethodsAndTokensGetApplesAnswers() async throws {
    let world = try Self.world()
    for (method, path, status, reason) in [
      ("POST", "/3/devices/" + Self.device, 404, "BadPath"), ("GET", "/", 404, "BadPath"),
      ("POST", "/2/device/" + Self.device, 404, "BadPath"),
      ("GET", "/3/device/" + Self.device, 405, "MethodNotAllowed"),
      ("DELETE", "/3/device/" + Self.device, 405, "MethodNotAllowed"),
      ("POST", "/3/device/", 400, "MissingDeviceToken"),
      ("POST", "/3/device", 400, "MissingDeviceToken"),
    ] {
      let response = await world.client.send(method, path, body: "{}")
      #expect(response.status == status, "\(method) \(path)")
      #expect(Self.reason(response) == reason, "\(method) \(path): \(response.bodyString)")
      #expect(response.headers["Content-Type"] == "application/json")
    }
    // The operator's routes keep our own errors.
    #expect(await world.client.get("/v1/sim/devices/" + Self.device).status == 401)
  }

  @Test func anOperatorUnregistersATokenAndPushesThenAnswer410WithItsTimeInMilliseconds() async throws {
    let world = try Self.world()
    let payload = #"{"aps":{"alert":"Hi"}}"#
    #expect(await world.push(Self.device, payload: payload).status == 200)
    #expect(await world.client.send("POST", "/v1/sim/devices/\(Self.device)/unregister").status == 401)
    let unregistered = await world.client.send(
      "POST", "/v1/sim/devices/\(Self.device.uppercased())/unregister", headers: world.staff())
    #expect(unregistered.status == 200, "\(unregistered.bodyString)")
    world.clock.advance(by: 30)
    // Asked again: the first time stands.
    let again = await world.client.send(
      "POST", "/v1/sim/devices/\(Self.device)/unregister", headers: world.staff())
    #expect(again.bodyString == unregistered.bodyString)
    let gone = await world.push(Self.device, payload: payload)
    #expect(gone.status == 410)
    let body = try JSON.decode([String: JSONValue].self, from: Data(gone.body))
    #expect(body["reason"] == .string("Unregistered"))
    let since = (world.clock.now() - 30).timeIntervalSince1970
    #expect(body["timestamp"] == .number((since * 1000).rounded(.down)))
    let record = await world.client.get("/v1/sim/devices/" + Self.device, headers: world.staff())
    #expect(record.status == 200 && record.bodyString.contains(#""status":410"#))
  }

  @Test func aBackgroundPushGoesAtPriorityFiveOnly() async throws {
    let world = try Self.world()
    let silent = #"{"aps":{"content-available":1}}"#
    let woken = await world.push(Self.device, type: "background", priority: "5", payload: silent)
    #expect(woken.status == 200, "\(woken.bodyString)")
    let urgent = await world.push(Self.device, type: "background", priority: "10", payload: silent)
    #expect(urgent.status == 400 && Self.reason(urgent) == "BadPriority")
    // Without a priority header APNs assumes 10: refused too.
    let assumed = await world.push(Self.device, type: "background", payload: silent)
    #expect(assumed.status == 400 && Self.reason(assumed) == "BadPriority")
    let wrongTopic = await world.client.send(
      "POST", "/3/device/" + Self.device,
      headers: [
        "authorization": world.provider.authorizationHeaderValue(), "apns-push-type": "background",
        "apns-topic": Self.bundle + ".push-type.liveactivity", "apns-priority": "5",
      ], body: silent)
    #expect(wrongTopic.status == 400 && Self.reason(wrongTopic) == "DeviceTokenNotForTopic")
  }
}
