import Foundation
import GrocerAuth
import GrocerCore
import GrocerRabbitMQ
import GrocerRuntime
import GrocerTestSupport
import Testing

#if canImport(FoundationNetworking)
  import FoundationNetworking
#endif

/// Every service executable against a PostgreSQL database that is not there yet: it starts
/// anyway, `/health/ready` answers 503 naming the database, and once the database exists it is
/// migrated and the service becomes ready without a restart. A connection string that is not
/// PostgreSQL's stops it at once with a message that says so.
@Suite(.serialized) struct DatabaseLaterTests {
  init() throws { try TestBroker.ensureRunning() }

  /// A service on a port of its own, its queues named for this test alone.
  func environment(_ service: String, port: Int, url: String, payments: String) -> [String: String] {
    let run = "later-\(UUID().uuidString.prefix(6).lowercased())"
    return [
      "GROCER_HTTP_PORT": "\(port)", "GROCER_HTTP_HOST": "127.0.0.1", "GROCER_LOG_LEVEL": "warning",
      "GROCER_DATA_DIR": NSTemporaryDirectory() + run, "GROCER_SERVICE_NAME": "\(service)-\(run)",
      "GROCER_QUEUE_EXPIRES": "60", "GROCER_RESERVATION_QUEUE": "\(run).reservations",
      "GROCER_CATALOGUE_QUEUE": "\(run).catalogue", "GROCER_CART_CHECKOUT_QUEUE": "\(run).checkout",
      "GROCER_DATABASE_URL": url, "GROCER_PAYMENT_SIM_DATABASE_URL": payments,
    ]
  }

  /// Deletes the queues a service of `environment` declared, once it stopped. Left to expire,
  /// one would vanish under a later test's publish to the shared exchange, and the broker closes
  /// that publisher's channel (541 INTERNAL_ERROR) when a quorum queue is deleted mid-publish.
  func removeQueues(of environment: [String: String]) async throws {
    let service = environment["GROCER_SERVICE_NAME"]!
    let queues =
      [service, "\(service).parking"]
      + [
        "GROCER_RESERVATION_QUEUE", "GROCER_CATALOGUE_QUEUE", "GROCER_CART_CHECKOUT_QUEUE",
      ].compactMap { environment[$0] }
    try await AMQPAdmin.deleteQueues(configuration: TestBroker.configuration(), queues)
  }

  @Test(arguments: LocalSystem.names)
  func aServiceStartedBeforeItsDatabaseIsNotReadyUntilItComes(service: String) async throws {
    let (url, payments) = (try TestPostgres.unusedDatabase("later"), try TestPostgres.unusedDatabase("later"))
    defer {
      TestPostgres.drop(url)
      TestPostgres.drop(payments)
    }
    let port = try LocalPort.free()
    let settings = environment(service, port: port, url: url, payments: payments)
    let running = try ServiceExecutable(service, environment: settings).start()
    let ready = URL(string: "http://127.0.0.1:\(port)/health/ready")!
    #expect(await running.answers(ready, status: 503), "\(service): \(running.logText)")
    let (body, _) = try await URLSession.shared.data(from: ready)
    #expect(String(decoding: body, as: UTF8.self).contains(#""database":"down""#), "\(service)")
    #expect(running.isRunning, "\(service) stopped: \(running.logText)")

    try TestPostgres.create(url)
    try TestPostgres.create(payments)
    #expect(
      await running.answers(ready, timeout: .seconds(30)), "\(service) never became ready: \(running.logText)"
    )
    let ending = await running.terminate()
    #expect(ending.exited && ending.status == 0, "\(service): \(ending.log)")
    try await removeQueues(of: settings)
  }

  /// The database taken away under a running StockService (its connections ended, as a server
  /// restart ends them, and the database renamed so none can be made): requests that need it are
  /// 503 with `Retry-After`, never a 500 or a 404, and once it is back the service answers from it
  /// again.
  @Test func aDatabaseThatGoesAwayMidRunIs503WithRetryAfterUntilItIsBack() async throws {
    let url = try TestPostgres.freshDatabase("later")
    defer { TestPostgres.drop(url) }
    let port = try LocalPort.free()
    let settings = environment("stock-service", port: port, url: url, payments: "")
    let running = try ServiceExecutable("stock-service", environment: settings).start()
    let base = "http://127.0.0.1:\(port)"
    #expect(await running.answers(URL(string: base + "/health/ready")!), "\(running.logText)")
    let now = Date()
    let token = HS256Signer(secret: Settings.localJWTSecret).sign(
      claims: TokenClaims(subject: "u1", role: .customer, hubs: [], issuedAt: now, expiresAt: now + 600))
    @Sendable func hub() async throws -> (Int, String?) {
      var request = URLRequest(url: URL(string: base + "/v1/hubs/h9")!)
      request.setValue("Bearer \(token)", forHTTPHeaderField: "Authorization")
      let (_, response) = try await URLSession.shared.data(for: request)
      let http = response as? HTTPURLResponse
      return (http?.statusCode ?? 0, http?.value(forHTTPHeaderField: "Retry-After"))
    }
    #expect(try await hub().0 == 404)
    try await TestPostgres.takeAway(url)
    let gone = try await hub()
    #expect(gone.0 == 503 && gone.1 != nil, "\(gone)")
    try TestPostgres.bringBack(url)
    let back = await eventually(timeout: .seconds(20)) { (try? await hub().0) == 404 }
    #expect(back, "\(running.logText)")
    let ending = await running.terminate()
    #expect(ending.exited && ending.status == 0)
    try await removeQueues(of: settings)
  }

  @Test(arguments: LocalSystem.names)
  func aConnectionStringThatIsNotPostgreSQLsStopsTheService(service: String) async throws {
    let port = try LocalPort.free()
    let running = try ServiceExecutable(
      service,
      environment: environment(
        service, port: port, url: "mysql://grocer@127.0.0.1/grocer", payments: "")
    ).start()
    let status = await running.exitStatus(within: .seconds(20))
    #expect(status != nil && status != 0, "\(service) still runs or exited 0")
    #expect(running.logText.contains("GROCER_DATABASE_URL must be a postgresql:// URL"), "\(running.logText)")
  }
}
