import Foundation
import GrocerAMQP
import GrocerAuth
import GrocerCore
import GrocerRabbitMQ
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
    let unique = UUID().uuidString.prefix(8).lowercased()
    let name = "cart-process-\(unique)"
    let port = try LocalPort.free()
    let secret = "cart-process-secret"
    let executable = try ServiceExecutable(
      "cart-service",
      environment: [
        "GROCER_DATA_DIR": NSTemporaryDirectory() + name, "GROCER_HTTP_PORT": String(port),
        "GROCER_SERVICE_NAME": name, "GROCER_CART_CHECKOUT_QUEUE": "\(name).checkout",
        "GROCER_CATALOGUE_QUEUE": "\(name).catalogue", "GROCER_CATALOGUE_TIMEOUT": "0.5",
        "GROCER_QUEUE_EXPIRES": "600", "GROCER_JWT_SECRET": secret,
      ])
    let queues = [name, "\(name).parking", "\(name).checkout"]
    try await withCleanup({
      try? await AMQPAdmin.deleteQueues(configuration: TestBroker.configuration(), queues)
    }) {
      #expect(try executable.runToEnd(["load-demo"]) == 0)
      let service = try executable.start()
      let ready = URL(string: "http://127.0.0.1:\(port)/health/ready")!
      #expect(await service.answers(ready), "the service never became ready on port \(port)")
      // Readiness names the broker node each connection is on.
      let (readyBody, _) = try await URLSession.shared.data(from: ready)
      let nodes = try JSONDecoder().decode(Readiness.self, from: readyBody).brokerNodes
      #expect(nodes.count >= 2, "\(nodes)")
      #expect(nodes.values.allSatisfy { $0 == "127.0.0.1:5672" }, "\(nodes)")

      var request = URLRequest(url: URL(string: "http://127.0.0.1:\(port)/v1/hubs/h1/cart")!)
      let now = Date()
      let token = HS256Signer(secret: secret).sign(
        claims: TokenClaims(subject: "alice", role: .customer, hubs: [], issuedAt: now, expiresAt: now + 600))
      request.setValue("Bearer \(token)", forHTTPHeaderField: "Authorization")
      let (body, response) = try await URLSession.shared.data(for: request)
      #expect((response as? HTTPURLResponse)?.statusCode == 503)
      #expect(String(decoding: body, as: UTF8.self).contains("catalogueLoading"))

      let ending = await service.terminate()
      #expect(ending.exited, "the service did not exit after SIGTERM")
      #expect(ending.status == 0)
      #expect(ending.log.contains("\"msg\":\"stopping\""))
    }
  }
}

/// The part of `/health/ready`'s answer these tests read.
private struct Readiness: Decodable {
  var brokerNodes: [String: String]
}
