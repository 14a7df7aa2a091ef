import APNsSimulator
import Foundation
import GrocerAuth
import GrocerCore
import GrocerHTTP
import GrocerHTTPClient
import GrocerHTTPServer
import GrocerTestSupport
import Testing

@testable import NotifyGateway

/// The simulator served as APNs (`APNsSimulatorRoutes` on an in-process HTTPServer) behind nginx
/// terminating TLS and HTTP/2, with the provider key it trusts: what `CurlAPNsTransport` talks to
/// in these tests.
///
/// Two manual clocks: `apnsClock` is APNs's (the verifier's and the simulator's), `providerClock`
/// the gateway's (when its tokens are minted), so a test can age a token on one side only.
final class APNsStack: @unchecked Sendable {
  static let keyID = "KEY123ABCD"
  static let teamID = "TEAM987XYZ"
  static let bundle = "com.grocer.app"

  let key: ES256Key
  let apnsClock: ManualClock
  let providerClock: ManualClock
  let simulator: APNsSimulator
  let verifier: APNsProviderTokenVerifier
  let server: HTTPServer
  let front: NginxH2Front
  private var transports: [CurlAPNsTransport] = []

  private init(
    key: ES256Key, apnsClock: ManualClock, providerClock: ManualClock, simulator: APNsSimulator,
    verifier: APNsProviderTokenVerifier, server: HTTPServer, front: NginxH2Front
  ) {
    self.key = key
    self.apnsClock = apnsClock
    self.providerClock = providerClock
    self.simulator = simulator
    self.verifier = verifier
    self.server = server
    self.front = front
  }

  /// Runs `body` with a fresh stack, stopping it (and every transport it made) afterwards.
  static func run(perTokenBurst: Int = 1000, _ body: (APNsStack) async throws -> Void) async throws {
    let stack = try await start(perTokenBurst: perTokenBurst)
    do {
      try await body(stack)
    } catch {
      await stack.stop()
      throw error
    }
    await stack.stop()
  }

  static func start(perTokenBurst: Int) async throws -> APNsStack {
    let key = try ES256Key.generate()
    let apnsClock = ManualClock()
    let providerClock = ManualClock()
    var options = APNsSimulator.Options(bundleID: bundle)
    options.perTokenBurst = perTokenBurst
    let simulator = APNsSimulator(options: options, clock: apnsClock)
    let verifier = APNsProviderTokenVerifier(keys: [keyID: key.publicKey], teamID: teamID, clock: apnsClock)
    var router = Router(logger: .discarding())
    router.add(APNsSimulatorRoutes(simulator: simulator, verifier: verifier).routes)
    let server = HTTPServer(
      configuration: HTTPServerConfiguration(
        port: 0, threadPoolSize: 2, shutdownGracePeriod: .milliseconds(100)),
      responder: APNsPathResponder(router: router), logger: .discarding())
    try await server.start()
    let front: NginxH2Front
    do {
      front = try await NginxH2Front.start(upstreamPort: server.port)
    } catch {
      await server.shutdown()
      throw error
    }
    return APNsStack(
      key: key, apnsClock: apnsClock, providerClock: providerClock, simulator: simulator, verifier: verifier,
      server: server, front: front)
  }

  /// A started transport to this stack's front, signing with `key` (the trusted one by default).
  func transport(key: ES256Key? = nil) async throws -> CurlAPNsTransport {
    let token = try APNsProviderToken(
      key: key ?? self.key, keyID: Self.keyID, teamID: Self.teamID, clock: providerClock)
    let transport = CurlAPNsTransport(
      host: .custom(front.url), providerToken: token, logger: .discarding(), caFile: front.certificatePath)
    transports.append(transport)
    try await transport.start()
    return transport
  }

  func stop() async {
    for transport in transports { await transport.shutdown() }
    front.stop()
    await server.shutdown()
  }

  static func deviceToken(_ n: Int) -> String {
    String(format: "%08x", n) + String(repeating: "cd", count: 28)
  }

  /// An alert push to device `token`.
  static func alert(_ token: String, payload: [UInt8] = Array(#"{"aps":{"alert":"Hello"}}"#.utf8))
    -> APNsRequest
  {
    APNsRequest(
      token: token, pushType: .alert, topic: bundle, priority: 10, expiration: nil,
      id: UUID().uuidString.lowercased(), payload: payload)
  }
}
