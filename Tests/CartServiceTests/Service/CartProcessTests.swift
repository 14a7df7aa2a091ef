import Foundation
import GrocerAMQP
import GrocerAuth
import GrocerCore
import GrocerTestSupport
import Testing

#if canImport(FoundationNetworking)
  import FoundationNetworking
#endif

/// The `cart-service` executable itself: it defines the demo codes, starts from its environment
/// alone, answers (503 `catalogueLoading` while no StockService has filled its copy), and drains
/// and exits 0 on SIGTERM.
@Suite(.serialized) struct CartProcessTests {
  init() throws { try TestBroker.ensureRunning() }

  @Test func theExecutableServesAndExitsCleanlyOnSIGTERM() async throws {
    let binary = TestBroker.repositoryRoot.appendingPathComponent(".build/debug/cart-service").path
    try #require(
      FileManager.default.isExecutableFile(atPath: binary), "build it first (make test does): \(binary)")
    let unique = UUID().uuidString.prefix(8).lowercased()
    let name = "cart-process-\(unique)"
    let port = Int.random(in: 20_000...29_000)
    let secret = "cart-process-secret"
    let environment = ProcessInfo.processInfo.environment.merging([
      "GROCER_DATA_DIR": NSTemporaryDirectory() + name, "GROCER_HTTP_PORT": String(port),
      "GROCER_SERVICE_NAME": name, "GROCER_CART_CHECKOUT_QUEUE": "\(name).checkout",
      "GROCER_CATALOGUE_QUEUE": "\(name).catalogue", "GROCER_CATALOGUE_TIMEOUT": "0.5",
      "GROCER_QUEUE_EXPIRES": "600",
      "GROCER_JWT_SECRET": secret,
    ]) { $1 }

    let queues = [name, "\(name).parking", "\(name).checkout"]
    try await withCleanup({
      try? await AMQPAdmin.deleteQueues(configuration: TestBroker.configuration(), queues)
    }) {
      let demo = Process()
      demo.executableURL = URL(fileURLWithPath: binary)
      demo.arguments = ["load-demo"]
      demo.environment = environment
      demo.standardOutput = FileHandle.nullDevice
      demo.standardError = FileHandle.nullDevice
      try demo.run()
      demo.waitUntilExit()
      #expect(demo.terminationStatus == 0)

      let service = Process()
      service.executableURL = URL(fileURLWithPath: binary)
      service.environment = environment
      let log = Pipe()
      service.standardError = log
      try service.run()
      defer { if service.isRunning { service.terminate() } }

      let ready = URL(string: "http://127.0.0.1:\(port)/health/ready")!
      let answered = await eventually(timeout: .seconds(20)) {
        guard let (_, response) = try? await URLSession.shared.data(from: ready) else { return false }
        return (response as? HTTPURLResponse)?.statusCode == 200
      }
      #expect(answered, "the service never became ready on port \(port)")

      var request = URLRequest(url: URL(string: "http://127.0.0.1:\(port)/v1/hubs/h1/cart")!)
      let now = Date()
      let token = HS256Signer(secret: secret).sign(
        claims: TokenClaims(subject: "alice", role: .customer, hubs: [], issuedAt: now, expiresAt: now + 600))
      request.setValue("Bearer \(token)", forHTTPHeaderField: "Authorization")
      let (body, response) = try await URLSession.shared.data(for: request)
      #expect((response as? HTTPURLResponse)?.statusCode == 503)
      #expect(String(decoding: body, as: UTF8.self).contains("catalogueLoading"))

      kill(service.processIdentifier, SIGTERM)
      let exited = await eventually(timeout: .seconds(20)) { !service.isRunning }
      #expect(exited, "the service did not exit after SIGTERM")
      #expect(service.terminationStatus == 0)
      let lines = String(decoding: log.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
      #expect(lines.contains("\"msg\":\"stopping\""))
    }
  }
}
