import Foundation
import GrocerAuth
import GrocerContracts
import GrocerCore
import GrocerHTTP
import GrocerHTTPTesting
import GrocerRuntime
import GrocerStorage
import GrocerTestSupport
import Testing

@testable import StockService

/// One StockService wired for a test: a temporary data directory, a manual clock, sequential
/// ids, names of its own on the broker (so tests never share queues with each other or with a
/// running `make run`), and a small seeded assortment.
struct StockFixture {
  static let secret = "stock-test-secret"

  let app: StockServiceApp
  let client: TestClient
  let clock: ManualClock
  let configuration: StockServiceConfiguration
  let demo: DemoAssortment

  /// Where the data is (`TestEngine.selected`'s engine); share it to run replicas on one database.
  let location: TestLocation
  /// Drops the database the fixture made once it is gone (nil when it was given).
  private let cleanup: DatabaseCleanup?

  /// - Parameters:
  ///   - dataDirectory: share one (with `sharing`) to run two replicas on one database.
  ///   - sharing: another fixture's `location`, for replicas on one database.
  ///   - serviceName: share one to have two replicas share the durable queue.
  init(
    dataDirectory: String? = nil, sharing shared: TestLocation? = nil, serviceName: String? = nil,
    amqpURL: String? = nil, clock: ManualClock = ManualClock(), productsPerHub: Int = 40
  ) throws {
    let unique = UUID().uuidString.prefix(8).lowercased()
    let directory = dataDirectory ?? NSTemporaryDirectory() + "grocer-stock-\(unique)"
    location = try shared ?? TestEngine.selected.freshLocation("stock")
    cleanup = shared == nil ? DatabaseCleanup(location) : nil
    var values = [
      "GROCER_DATA_DIR": directory, "GROCER_JWT_SECRET": Self.secret,
      "GROCER_REPLICA_ID": "replica-\(unique)",
    ].merging(location.environment) { $1 }
    if let amqpURL { values["GROCER_AMQP_URL"] = amqpURL }
    var configuration = StockServiceConfiguration(settings: Settings(values))
    let name = serviceName ?? "stock-test-\(unique)"
    configuration.serviceName = name
    configuration.reservationQueue = "\(name).reservations"
    configuration.catalogueQueue = "\(name).catalogue"
    configuration.reservationSweepInterval = 0.1
    // A queue a crashed test leaves behind goes away by itself instead of collecting events.
    configuration.queueExpiry = 600
    self.configuration = configuration
    self.clock = clock
    demo = DemoAssortment.generate(productsPerHub: productsPerHub)
    app = try buildStockService(
      configuration: configuration, logger: .discarding(), clock: clock,
      ids: SequentialIDs(prefix: "ev-\(unique)"))
    _ = try app.commands.loadDemo(demo)
    client = TestClient(app.router)
  }

  static func token(
    _ subject: String, role: Principal.Role = .customer, hubs: [String] = [], clock: ManualClock,
    secret: String = secret, ttl: TimeInterval = 3600
  ) -> String {
    HS256Signer(secret: secret).sign(
      claims: TokenClaims(
        subject: subject, role: role, hubs: hubs, issuedAt: clock.now(), expiresAt: clock.now() + ttl))
  }

  func staff(_ hubs: [String] = ["h1"]) -> [String: String] {
    ["Authorization": "Bearer " + Self.token("staff-1", role: .staff, hubs: hubs, clock: clock)]
  }

  /// The outbox's pending events, oldest first (the relay is not running in in-process tests).
  func outbox() throws -> [EventEnvelope] {
    try app.store.database.read { db in
      try Outbox.pending(limit: 100_000, in: db).map {
        try JSON.decode(EventEnvelope.self, from: $0.message.body)
      }
    }
  }

  /// A product of the demo assortment with at least `minimum` on hand at `hub`.
  func sku(hub: HubID = "h1", minimum: Int = 5) -> SKU {
    demo.products.map(\.sku).first { (demo.counts[hub]?[$0] ?? 0) >= minimum }!
  }

  func stock(_ hub: HubID, _ skus: [SKU]) async throws -> [String: Int] {
    let response = await client.get("/v1/hubs/\(hub)/stock?ids=\(skus.joined(separator: ","))")
    try #require(response.status == 200, "\(response.bodyString)")
    return try response.json(as: StockBody.self).stock
  }
}

struct StockBody: Decodable {
  var asOf: String
  var stock: [String: Int]
}

struct ProblemBody: Decodable {
  var status: Int
  var code: String
  var detail: String
}
