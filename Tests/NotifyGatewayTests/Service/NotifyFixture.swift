import APNsSimulator
import Foundation
import GrocerAMQP
import GrocerAuth
import GrocerContracts
import GrocerCore
import GrocerHTTP
import GrocerHTTPTesting
import GrocerRuntime
import GrocerStorage
import GrocerTestSupport
import Synchronization
import Testing

@testable import NotifyGateway

/// One NotifyGateway for a test: temporary data, a manual clock, the simulator (or a scripted
/// transport), a queue of its own.
struct NotifyFixture {
  static let secret = "notify-test-secret"
  static let bundle = "com.grocer.app"

  let app: NotifyGatewayApp
  let client: TestClient
  let clock: ManualClock
  let configuration: NotifyGatewayConfiguration
  var consumer: String { configuration.serviceName }
  /// Where the data is (`TestEngine.selected`'s engine); share it to run replicas on one database.
  let location: TestLocation
  /// Drops the database the fixture made once it is gone (nil when it was given).
  private let cleanup: DatabaseCleanup?

  /// - Parameter serviceName: the queue; replicas of one gateway share it.
  init(
    budget: Int = 12, transport: (any APNsTransport)? = nil, clock: ManualClock = ManualClock(),
    sharing shared: TestLocation? = nil, serviceName: String? = nil, replicaID: String? = nil
  ) throws {
    let unique = UUID().uuidString.prefix(8).lowercased()
    location = try shared ?? TestEngine.selected.freshLocation("notify")
    cleanup = shared == nil ? DatabaseCleanup(location) : nil
    var configuration = NotifyGatewayConfiguration(
      settings: Settings(
        [
          "GROCER_DATA_DIR": NSTemporaryDirectory() + "grocer-notify-\(unique)",
          "GROCER_JWT_SECRET": Self.secret,
        ].merging(location.environment) { $1 }))
    configuration.serviceName = serviceName ?? "notify-test-\(unique)"
    configuration.replicaID = replicaID ?? "notify-test-\(unique)"
    configuration.hourlyBudget = budget
    configuration.queueExpiry = 600
    configuration.simulatorBurst = 1000
    self.configuration = configuration
    self.clock = clock
    app = try buildNotifyGateway(
      configuration: configuration, logger: .discarding(), clock: clock, transport: transport)
    client = TestClient(app.router)
  }

  static func activityToken(_ n: Int) -> String {
    String(format: "%08x", n) + String(repeating: "ab", count: 76)
  }
  static func deviceToken(_ n: Int) -> String {
    String(format: "%08x", n) + String(repeating: "cd", count: 28)
  }

  func snapshot(
    _ orderId: String, _ version: Int64, _ status: TrackingStatus, eta: (Double, Double)? = (600, 900)
  ) -> TrackingSnapshot {
    TrackingSnapshot(
      orderId: orderId, version: version, status: status, problem: nil,
      eta: status.isTerminal
        ? nil : eta.map { ETARange(earliest: clock.now() + $0.0, latest: clock.now() + $0.1) },
      rider: status == .onTheWay || status == .arriving
        ? RiderView(firstName: "Ana", lat: 52.52, lng: 13.40, recordedAt: clock.now()) : nil,
      destination: GeoPoint(lat: 52.53, lng: 13.41), generatedAt: clock.now() + Double(version))
  }

  /// `tracking.updated` as the consumer would apply it.
  @discardableResult
  func update(
    _ snapshot: TrackingSnapshot, changed: [TrackingChange] = [.stage], user: String = "u1",
    id: String? = nil,
    correlationID: String? = nil
  ) throws -> PendingUpdates.Queued {
    try app.commands.queueUpdate(
      TrackingUpdated(userId: user, hub: "h1", snapshot: snapshot, changed: changed, previousStatus: .placed),
      occurredAt: clock.now(), correlationID: correlationID,
      messageID: id ?? "m-\(snapshot.orderId)-\(snapshot.version)",
      consumer: consumer)
  }

  /// `sequence`: the token event's (a replacement token needs a higher one).
  func activity(_ orderId: String, token: String, user: String = "u1", sequence: Int64 = 1) throws {
    try app.commands.recordActivityToken(
      LiveActivityToken(orderId: orderId, userId: user, hub: "h1", token: token), sequence: sequence,
      messageID: "t-\(orderId)-\(token)", consumer: consumer)
  }

  /// `order.confirmed` of `orderId` for `user`, as the consumer applies it (the request id
  /// `req-<orderId>`).
  func confirmed(_ orderId: String, user: String = "u1") throws {
    try app.commands.orderConfirmed(
      OrderConfirmed(
        orderId: orderId, userId: user, hub: "h1", cartVersion: 1, lines: [], totals: .zero("EUR"),
        deliverTo: GeoPoint(lat: 52.53, lng: 13.41), paymentId: "pay", placedAt: clock.now()),
      occurredAt: clock.now(), correlationID: "req-\(orderId)", messageID: "m-\(orderId)", consumer: consumer)
  }

  /// Runs delivery rounds until nothing is due.
  func deliver() async {
    while await app.engine.round() {}
  }

  /// What the simulator recorded for `token` (nothing when its journal cannot be read).
  func received(_ token: String) -> [APNsSimulator.Received] {
    ((try? app.simulator?.received(by: token)) ?? nil) ?? []
  }

  /// The `push.delivered` / `push.failed` events waiting in the outbox (the fixture runs no
  /// relay), oldest first; each envelope's subject and sequence are checked on the way.
  func outcomes() throws -> [(type: String, outcome: PushOutcome, correlationId: String?)] {
    try app.store.database.read { try Outbox.pending(limit: 10_000, in: $0) }.compactMap { entry in
      let envelope = try JSON.decode(EventEnvelope.self, from: entry.message.body)
      guard envelope.type.hasPrefix("push.") else { return nil }
      let outcome = try envelope.payload(as: PushOutcome.self)
      #expect(envelope.subject == "push/" + outcome.pushId && envelope.sequence == 1)
      #expect(envelope.source == PushEventType.source && entry.message.routingKey == envelope.type)
      return (envelope.type, outcome, envelope.correlationId)
    }
  }

  func headers(_ user: String, role: Principal.Role = .customer, hubs: [String] = ["*"]) -> [String: String] {
    let token = HS256Signer(secret: Self.secret).sign(
      claims: TokenClaims(
        subject: user, role: role, hubs: hubs, issuedAt: clock.now(), expiresAt: clock.now() + 3600))
    return ["Authorization": "Bearer \(token)"]
  }
}

/// A transport answering from a script, then 200: for 429 storms and dead tokens.
final class ScriptedTransport: APNsTransport {
  let script = Mutex<[APNsResponse]>([])
  let sent = Mutex<[APNsRequest]>([])

  func send(_ request: APNsRequest) async throws -> APNsResponse {
    sent.withLock { $0.append(request) }
    return script.withLock { $0.isEmpty ? .ok : $0.removeFirst() }
  }
}
