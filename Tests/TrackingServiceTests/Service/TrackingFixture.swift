import Foundation
import GrocerAMQP
import GrocerAuth
import GrocerContracts
import GrocerCore
import GrocerHTTP
import GrocerHTTPServer
import GrocerHTTPTesting
import GrocerRabbitMQ
import GrocerRuntime
import GrocerStorage
import GrocerTestSupport
import Testing

@testable import TrackingService

/// One TrackingService for a test: a temporary data directory, a manual clock, sequential ids,
/// a queue of its own. In-process tests create orders by calling the consumer's store method
/// with an `order.confirmed` payload; the event-flow test sends real events.
struct TrackingFixture {
  static let secret = "tracking-test-secret"

  let app: TrackingServiceApp
  let client: TestClient
  let clock: ManualClock
  let configuration: TrackingServiceConfiguration

  /// Drops the PostgreSQL database (or deletes nothing) once the fixture is gone, unless the
  /// test gave the location (replicas sharing one database).
  private let database: DatabaseCleanup?

  init(
    engine: TestEngine = .selected, sharing shared: TestLocation? = nil,
    clock: ManualClock = ManualClock(Date(timeIntervalSince1970: 1_789_999_980))
  ) throws {
    let unique = UUID().uuidString.prefix(8).lowercased()
    let location = try shared ?? engine.freshLocation("tracking")
    database = shared == nil ? DatabaseCleanup(location) : nil
    var configuration = TrackingServiceConfiguration(
      settings: Settings(
        [
          "GROCER_DATA_DIR": NSTemporaryDirectory() + "grocer-tracking-\(unique)",
          "GROCER_JWT_SECRET": Self.secret,
        ].merging(location.environment) { $1 }))
    configuration.serviceName = "tracking-test-\(unique)"
    configuration.replicaID = "tracking-test-\(unique)"
    configuration.queueExpiry = 600
    configuration.finishedRetention = 600
    self.configuration = configuration
    self.clock = clock
    app = try buildTrackingService(
      configuration: configuration, logger: .discarding(), clock: clock,
      ids: SequentialIDs(prefix: "t-\(unique)"))
    client = TestClient(app.router)
  }

  static let home = GeoPoint(lat: 52.53, lng: 13.41)

  /// `order.confirmed` for `orderId` as OrderService publishes it.
  func confirmed(_ orderId: String, user: String = "u1", hub: HubID = "h1") -> OrderConfirmed {
    OrderConfirmed(
      orderId: orderId, userId: user, hub: hub, cartVersion: 3, lines: [], totals: .zero("EUR"),
      deliverTo: Self.home, paymentId: "pay-\(orderId)", placedAt: clock.now())
  }

  /// Publishes `order.confirmed` for `orderId` on the broker, `copies` times with one id (as a
  /// publish whose confirm came late is sent again).
  func publishConfirmed(_ orderId: String, copies: Int = 1) async throws {
    let envelope = try EventEnvelope(
      id: "evt-\(orderId)", type: OrderEventType.confirmed, occurredAt: clock.now(),
      source: OrderEventType.source, correlationId: "req-1", subject: EventSubject.order(orderId),
      sequence: 1,
      payload: confirmed(orderId))
    let publisher = AMQPPublisher(
      configuration: TestBroker.configuration("\(configuration.serviceName)-test-publisher"),
      logger: .discarding(), metrics: MetricsRegistry())
    try await publisher.start()
    #expect(await publisher.waitUntilConnected())
    try await publisher.publish(try (0..<copies).map { _ in try envelope.message() })
    await publisher.shutdown()
  }

  /// `push.delivered` (status 200) or `push.failed` for `orderId`'s Live Activity, as NotifyGateway
  /// publishes it, answered now.
  func pushOutcome(
    _ orderId: String, token: String, status: Int?, version: Int64, event: String = "update",
    reason: String? = nil
  ) -> PushOutcome {
    PushOutcome(
      pushId: "push-\(orderId)-\(version)-\(status ?? 0)", tokenKind: .liveActivity, token: token,
      orderId: orderId,
      userId: "u1", pushType: "liveactivity", event: event, version: version, priority: 10, status: status,
      reason: reason, latencyMs: 30, answeredAt: clock.now(),
      staleDate: status == 200 && event == "update" ? clock.now() + 180 : nil)
  }

  /// Publishes `messages` on `grocer.events` with a publisher of the test's own.
  func publish(_ messages: [OutgoingMessage]) async throws {
    let publisher = AMQPPublisher(
      configuration: TestBroker.configuration("\(configuration.serviceName)-test-publisher"),
      logger: .discarding(), metrics: MetricsRegistry())
    try await publisher.start()
    #expect(await publisher.waitUntilConnected())
    try await publisher.publish(messages)
    await publisher.shutdown()
  }

  /// Creates the tracking of `orderId` as the consumer would.
  func place(_ orderId: String, user: String = "u1", hub: HubID = "h1") throws {
    try #require(
      try app.commands.startTracking(
        confirmed(orderId, user: user, hub: hub), messageID: "m-\(orderId)",
        consumer: configuration.serviceName,
        correlationID: nil))
  }

  /// Opens `orderId`'s tracking stream in-process; the reader reads what it sends.
  func stream(_ orderId: String, as headers: [String: String]? = nil, lastEventID: String? = nil) async throws
    -> StreamReader
  {
    var fields = headers ?? customer
    if let lastEventID { fields["Last-Event-ID"] = lastEventID }
    let response = await client.get("/v1/orders/\(orderId)/tracking/events", headers: fields)
    try #require(response.status == 200, "\(response.status) \(response.bodyString)")
    #expect(response.headers["Content-Type"] == "text/event-stream")
    return StreamReader(try #require(response.stream))
  }

  func headers(_ subject: String, role: Principal.Role = .customer, hubs: [String] = []) -> [String: String] {
    let token = HS256Signer(secret: Self.secret).sign(
      claims: TokenClaims(
        subject: subject, role: role, hubs: hubs, issuedAt: clock.now(), expiresAt: clock.now() + 3600))
    return ["Authorization": "Bearer \(token)", "Content-Type": "application/json"]
  }

  var customer: [String: String] { headers("u1") }
  var staff: [String: String] { headers("s1", role: .staff, hubs: ["h1"]) }
  func rider(_ id: String = "r7") -> [String: String] { headers(id, role: .rider) }

  func tracking(_ orderId: String, as headers: [String: String]? = nil) async throws -> TrackingSnapshot {
    let response = await client.get("/v1/orders/\(orderId)/tracking", headers: headers ?? customer)
    try #require(response.status == 200, "\(response.bodyString)")
    return try response.json(as: TrackingSnapshot.self)
  }

  func status(_ orderId: String, _ body: String, as headers: [String: String]? = nil) async -> HTTPResponse {
    await client.send("POST", "/v1/orders/\(orderId)/status", headers: headers ?? staff, body: body)
  }

  func fix(_ orderId: String, lat: Double, lng: Double, at: Date, as headers: [String: String]? = nil) async
    -> HTTPResponse
  {
    await client.send(
      "POST", "/v1/orders/\(orderId)/rider", headers: headers ?? rider(),
      body: #"{"lat":\#(lat),"lng":\#(lng),"recordedAt":"\#(Timestamp.string(from: at))"}"#)
  }

  /// The `tracking.updated` events in the outbox, oldest first.
  func updates(_ orderId: String? = nil) throws -> [TrackingUpdated] {
    try app.store.database.read { db in
      try Outbox.pending(limit: 100_000, in: db).map {
        try JSON.decode(EventEnvelope.self, from: $0.message.body)
      }
      .filter {
        $0.type == TrackingEventType.updated
          && (orderId == nil || $0.subject == orderId.map(EventSubject.tracking))
      }
      .map { try $0.payload(as: TrackingUpdated.self) }
    }
  }

  func start() async throws {
    try TestBroker.ensureRunning()
    for service in app.services where !(service is HTTPServer) { try await service.start() }
    let ready = await eventually(timeout: .seconds(15)) { await client.get("/health/ready").status == 200 }
    try #require(ready)
  }

  func stop() async {
    for service in app.services.reversed() where !(service is HTTPServer) { await service.shutdown() }
    let name = configuration.serviceName
    try? await AMQPAdmin.deleteQueues(configuration: TestBroker.configuration(), [name, "\(name).parking"])
  }
}

struct Problem: Decodable {
  var status: Int
  var code: String
  var detail: String
}
