import Foundation
import GrocerAuth
import GrocerContracts
import GrocerCore
import GrocerRuntime
import Testing

@testable import NotifyGateway

/// The whole delivery engine pushing through the real HTTP/2 transport into the simulator served
/// as APNs, and the configuration that chooses that transport.
@Suite(.serialized) struct DeliveryOverHTTP2Tests {
  @Test func anOrdersJourneyReachesTheSimulatorThroughTheRealTransport() async throws {
    try await APNsStack.run { stack in
      let transport = try await stack.transport()
      let fixture = try NotifyFixture(transport: transport)
      #expect(fixture.app.services.first === transport, "started before the engine")
      let token = NotifyFixture.activityToken(21)
      try fixture.activity("h1", token: token)
      for (version, status) in [(1, TrackingStatus.placed), (2, .picking), (3, .arriving), (4, .delivered)] {
        try fixture.update(fixture.snapshot("h1", Int64(version), status))
        await fixture.deliver()
      }
      let pushes = try stack.simulator.received(by: token)
      #expect(pushes.map(\.status) == [200, 200, 200, 200])
      #expect(pushes.allSatisfy { $0.headers["apns-topic"] == "com.grocer.app.push-type.liveactivity" })
      #expect(pushes.allSatisfy { $0.headers["apns-push-type"] == "liveactivity" })
      guard case .object(let root)? = pushes.last?.payload, case .object(let aps)? = root["aps"] else {
        Issue.record("no aps in the last push")
        return
      }
      #expect(aps["event"] == .string("end"))
      #expect(try fixture.app.store.activity("h1")?.state.ended == true)
      #expect(try fixture.app.store.pendingCount() == 0)
    }
  }

  @Test func a410OverHTTP2ForgetsTheToken() async throws {
    try await APNsStack.run { stack in
      let fixture = try NotifyFixture(transport: try await stack.transport())
      let token = NotifyFixture.activityToken(22)
      try fixture.activity("h2", token: token)
      stack.simulator.unregister(token)
      try fixture.update(fixture.snapshot("h2", 1, .placed))
      await fixture.deliver()
      #expect(try stack.simulator.received(by: token).map(\.status) == [410])
      #expect(try fixture.app.store.activity("h2")?.token == nil)
    }
  }

  @Test func http2InTheEnvironmentBuildsTheRealTransportFromTheKeyFile() async throws {
    try await APNsStack.run { stack in
      let directory = NSTemporaryDirectory() + "grocer-apns-config-\(UUID().uuidString.prefix(8))"
      try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
      defer { try? FileManager.default.removeItem(atPath: directory) }
      try stack.key.pemRepresentation.write(
        toFile: directory + "/AuthKey.p8", atomically: true, encoding: .utf8)
      let configuration = NotifyGatewayConfiguration(
        settings: Settings([
          "GROCER_DATA_DIR": directory + "/data", "GROCER_APNS_TRANSPORT": "http2",
          "GROCER_APNS_URL": stack.front.url, "GROCER_APNS_CA_FILE": stack.front.certificatePath,
          "GROCER_APNS_KEY_FILE": directory + "/AuthKey.p8", "GROCER_APNS_KEY_ID": APNsStack.keyID,
          "GROCER_APNS_TEAM_ID": APNsStack.teamID,
        ]))
      // The gateway's clock mints the tokens; the stack's APNs clock must agree with it.
      let app = try buildNotifyGateway(
        configuration: configuration, logger: .discarding(), clock: stack.providerClock)
      #expect(app.simulator == nil)
      let transport = try #require(app.services.first as? CurlAPNsTransport)
      #expect(transport.client.configuration.baseURL == stack.front.url)
      try await transport.start()
      let token = APNsStack.deviceToken(23)
      #expect(try await transport.send(APNsStack.alert(token)).status == 200)
      #expect(try stack.simulator.received(by: token).count == 1)
      await transport.shutdown()
    }
  }

  @Test func unusableAPNsSettingsAreConfigurationErrors() throws {
    let directory = NSTemporaryDirectory() + "grocer-apns-bad-\(UUID().uuidString.prefix(8))"
    try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(atPath: directory) }
    try ES256Key.generate().pemRepresentation.write(
      toFile: directory + "/AuthKey.p8", atomically: true, encoding: .utf8)
    try "not a key".write(toFile: directory + "/Broken.p8", atomically: true, encoding: .utf8)
    let good = [
      "GROCER_DATA_DIR": directory + "/data", "GROCER_APNS_TRANSPORT": "http2",
      "GROCER_APNS_KEY_FILE": directory + "/AuthKey.p8", "GROCER_APNS_KEY_ID": "KEY123ABCD",
      "GROCER_APNS_TEAM_ID": "TEAM987XYZ",
    ]
    func error(_ changes: [String: String]) -> String? {
      let configuration = NotifyGatewayConfiguration(settings: Settings(good.merging(changes) { $1 }))
      do {
        _ = try configuration.curlAPNsTransport(clock: SystemClock(), logger: .discarding())
        _ = try buildNotifyGateway(configuration: configuration, logger: .discarding())
        return nil
      } catch let error as NotifyGatewayConfigurationError {
        return error.message
      } catch {
        return "unexpected \(error)"
      }
    }
    #expect(error([:]) == nil)
    #expect(error(["GROCER_APNS_URL": "production"]) == nil)
    #expect(error(["GROCER_APNS_TRANSPORT": "pigeon"])?.contains("GROCER_APNS_TRANSPORT") == true)
    #expect(error(["GROCER_APNS_KEY_FILE": ""])?.contains("GROCER_APNS_KEY_FILE") == true)
    #expect(error(["GROCER_APNS_KEY_FILE": directory + "/Broken.p8"])?.contains("Broken.p8") == true)
    #expect(error(["GROCER_APNS_KEY_FILE": directory + "/Missing.p8"])?.contains("Missing.p8") == true)
    #expect(error(["GROCER_APNS_KEY_ID": ""])?.contains("GROCER_APNS_KEY_ID") == true)
    #expect(error(["GROCER_APNS_KEY_ID": "short"])?.contains("short") == true)
    #expect(error(["GROCER_APNS_URL": "api.push.apple.com"])?.contains("GROCER_APNS_URL") == true)
    #expect(error(["GROCER_APNS_CA_FILE": directory + "/none.pem"])?.contains("GROCER_APNS_CA_FILE") == true)
  }

  @Test func apnsHostNames() {
    #expect(APNsHost("production")?.url == "https://api.push.apple.com")
    #expect(APNsHost("sandbox")?.url == "https://api.sandbox.push.apple.com")
    #expect(APNsHost("https://localhost:8443/")?.url == "https://localhost:8443")
    #expect(APNsHost("localhost:8443") == nil)
  }
}
