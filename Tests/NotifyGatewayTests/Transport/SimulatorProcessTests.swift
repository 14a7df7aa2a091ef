import APNsSimulator
import Foundation
import GrocerAuth
import GrocerCore
import GrocerHTTPClient
import GrocerTestSupport
import Testing

@testable import NotifyGateway

#if canImport(FoundationNetworking)
  import FoundationNetworking
#endif

/// `notify-gateway apns-simulator` as its own process, behind nginx, reached by the real transport.
@Suite(.serialized) struct SimulatorProcessTests {
  @Test func theSimulatorProcessAnswersTheRealTransportAndShowsItsRecord() async throws {
    let path = TestBroker.repositoryRoot.appendingPathComponent(".build/debug/notify-gateway").path
    try #require(
      FileManager.default.isExecutableFile(atPath: path), "build it first (make test does): \(path)")
    let directory = NSTemporaryDirectory() + "grocer-apns-sim-\(UUID().uuidString.prefix(8))"
    try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(atPath: directory) }
    let key = try ES256Key.generate()
    try key.publicKey.pemRepresentation.write(
      toFile: directory + "/key.pub.pem", atomically: true, encoding: .utf8)
    let port = try LocalPort.free()
    let secret = "apns-sim-test-secret"

    /// The simulator on `port`, on this test's data folder and key.
    func launch(on port: Int) throws -> Process {
      let process = Process()
      process.executableURL = URL(fileURLWithPath: path)
      process.arguments = ["apns-simulator"]
      process.environment = ProcessInfo.processInfo.environment.merging([
        "GROCER_HTTP_PORT": String(port), "GROCER_APNS_SIM_PUBLIC_KEY": directory + "/key.pub.pem",
        "GROCER_APNS_KEY_ID": APNsStack.keyID, "GROCER_APNS_TEAM_ID": APNsStack.teamID,
        "GROCER_JWT_SECRET": secret, "GROCER_LOG_LEVEL": "warning", "GROCER_DATA_DIR": directory + "/data",
      ]) { $1 }
      process.standardOutput = FileHandle.nullDevice
      process.standardError = FileHandle.nullDevice
      try process.run()
      return process
    }
    let process = try launch(on: port)
    defer {
      if process.isRunning {
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
      }
    }
    let started = await eventually(timeout: .seconds(20)) { LocalPort.accepts(port) }
    try #require(started, "the simulator process did not listen on \(port)")
    let front = try await NginxH2Front.start(upstreamPort: port)
    defer { front.stop() }

    let transport = CurlAPNsTransport(
      host: .custom(front.url),
      providerToken: try APNsProviderToken(
        key: key, keyID: APNsStack.keyID, teamID: APNsStack.teamID, clock: SystemClock()),
      logger: .discarding(), caFile: front.certificatePath)
    try await transport.start()
    let token = APNsStack.deviceToken(31)
    let request = APNsStack.alert(token)
    let response = try await transport.send(request)
    let badTopic = try await transport.send(
      APNsRequest(
        token: token, pushType: .liveactivity, topic: APNsStack.bundle, priority: 10, expiration: nil,
        id: UUID().uuidString.lowercased(), payload: Array("{}".utf8)))
    let staff = HS256Signer(secret: secret).sign(
      claims: TokenClaims(
        subject: "ops", role: .staff, hubs: ["*"], issuedAt: Date(), expiresAt: Date() + 3600))
    let record = try await transport.client.send(
      HTTPClientRequest(
        method: "GET", path: "/v1/sim/devices/" + token, headers: [("authorization", "Bearer " + staff)]))
    let anonymous = try await transport.client.send(
      HTTPClientRequest(method: "GET", path: "/v1/sim/devices/" + token))
    await transport.shutdown()

    #expect(response == APNsResponse(status: 200, id: request.id))
    #expect(badTopic.status == 400)
    #expect(badTopic.reason == "DeviceTokenNotForTopic")
    #expect(record.status == 200)
    #expect(record.version == .http2)
    struct Record: Decodable {
      struct Push: Decodable {
        var status: Int
        var headers: [String: String]
      }
      var token: String
      var pushes: [Push]
    }
    let shown = try JSON.decoder().decode(Record.self, from: Data(record.body))
    #expect(shown.token == token)
    #expect(shown.pushes.map(\.status) == [200, 400])
    #expect(shown.pushes.first?.headers["apns-id"] == request.id)
    #expect(anonymous.status == 401, "the record is for staff")

    // Killed without warning once its record was flushed (every 100 ms), then started again on
    // the same data: the record is still there.
    try await Task.sleep(for: .milliseconds(400))
    kill(process.processIdentifier, SIGKILL)
    process.waitUntilExit()
    let secondPort = try LocalPort.free()
    let again = try launch(on: secondPort)
    defer {
      if again.isRunning {
        kill(again.processIdentifier, SIGKILL)
        again.waitUntilExit()
      }
    }
    let restarted = await eventually(timeout: .seconds(20)) { LocalPort.accepts(secondPort) }
    try #require(restarted, "the simulator did not start again")
    var get = URLRequest(url: URL(string: "http://127.0.0.1:\(secondPort)/v1/sim/devices/" + token)!)
    get.setValue("Bearer " + staff, forHTTPHeaderField: "Authorization")
    let (kept, _) = try await URLSession.shared.data(for: get)
    let survived = try JSON.decoder().decode(Record.self, from: kept)
    #expect(survived.pushes.map(\.status) == [200, 400])
    #expect(survived.pushes.first?.headers["apns-id"] == request.id)

    kill(again.processIdentifier, SIGTERM)
    let exited = await eventually(timeout: .seconds(15)) { !again.isRunning }
    #expect(exited, "SIGTERM stops it")
  }
}
