import APNsSimulator
import Foundation
import GrocerAMQP
import GrocerContracts
import GrocerCore
import GrocerHTTP
import Synchronization
import Testing

@testable import NotifyGateway

/// Adversarial review of NotifyGateway: each test states a promise of SPEC.md / issue 6 that
/// the current code breaks.
@Suite struct NotifyReviewTests {
  /// What TrackingService accepts as a cancellation reason or a rider's first name: 300
  /// characters (grapheme clusters), each of these 25 UTF-8 bytes.
  static let longText = String(repeating: "👨‍👩‍👧‍👦", count: 300)

  static func aps(_ push: APNsSimulator.Received) -> [String: JSONValue] {
    guard case .object(let root) = push.payload, case .object(let aps)? = root["aps"] else { return [:] }
    return aps
  }

  @Test func aCancelledOrdersEndPushFitsInFourKilobytesWhateverTheReason() async throws {
    let fixture = try NotifyFixture()
    let token = NotifyFixture.activityToken(101)
    try fixture.activity("r1", token: token)
    try fixture.update(fixture.snapshot("r1", 1, .placed))
    await fixture.deliver()
    var cancelled = fixture.snapshot("r1", 2, .cancelled)
    cancelled.problem = Self.longText  // TrackingService accepts it (300 characters)
    let payload = PushPayloads.liveActivity(
      cancelled, event: .end, alert: AlertText.stage(cancelled))
    #expect(payload.count <= APNsRules.maximumPayload, "payload is \(payload.count) bytes")
    try fixture.update(cancelled)
    await fixture.deliver()
    let pushes = fixture.received(token)
    #expect(pushes.last?.status == 200, "the end was refused: \(pushes.last?.reason ?? "-")")
    #expect(pushes.last.map { Self.aps($0)["event"] } == .string("end"))
    #expect(try fixture.app.store.activity("r1")?.state.ended == true, "the card is never ended")
  }

  @Test func anArrivingUpdateFitsInFourKilobytesWhateverTheRidersName() async throws {
    let fixture = try NotifyFixture()
    let token = NotifyFixture.activityToken(102)
    try fixture.activity("r2", token: token)
    var arriving = fixture.snapshot("r2", 1, .arriving)
    arriving.rider?.firstName = Self.longText  // `firstName` is 1–300 characters in TrackingService
    try fixture.update(arriving)
    await fixture.deliver()
    let pushes = fixture.received(token)
    #expect(pushes.map(\.status) == [200], "\(pushes.map { $0.reason ?? "" })")
  }

  @Test func aRetryNeverGoesOutAfterTheUpdatesExpiration() async throws {
    let transport = ScriptedTransport()
    transport.script.withLock { $0 = [APNsResponse(status: 503, reason: "ServiceUnavailable")] }
    let fixture = try NotifyFixture(transport: transport)
    try fixture.activity("r3", token: NotifyFixture.activityToken(103))
    try fixture.update(fixture.snapshot("r3", 1, .placed))
    await fixture.deliver()
    let first = try #require(transport.sent.withLock { $0.first })
    let expiration = try #require(first.expiration)
    // The retry was planned before the expiration, but the gateway only gets to it later (a
    // slow round, a backlog, a pause): it must be dropped, not sent.
    fixture.clock.set(expiration + 5)
    await fixture.deliver()
    let late = transport.sent.withLock { $0.dropFirst() }
    #expect(
      late.isEmpty,
      "sent again at \(fixture.clock.now()) although it expired at \(expiration)")
    #expect(try fixture.app.store.pendingCount() == 0)
  }

  /// A token registered while the push to the old token is in flight.
  final class TokenSwapTransport: APNsTransport {
    let commands = Mutex<NotifyCommands?>(nil)
    let swapTo: String
    let consumer: String
    let sent = Mutex<[APNsRequest]>([])
    init(swapTo: String, consumer: String) {
      self.swapTo = swapTo
      self.consumer = consumer
    }
    func send(_ request: APNsRequest) async throws -> APNsResponse {
      let first = sent.withLock {
        $0.append(request)
        return $0.count == 1
      }
      if first, let commands = commands.withLock({ $0 }) {
        try commands.recordActivityToken(
          LiveActivityToken(orderId: "r4", userId: "u1", hub: "h1", token: swapTo), sequence: 2,
          messageID: "swap",
          consumer: consumer)
      }
      return .ok
    }
  }

  @Test func aTokenReplacedWhileTheEndIsInFlightStillGetsTheEnd() async throws {
    let (old, new) = (NotifyFixture.activityToken(104), NotifyFixture.activityToken(105))
    let unique = UUID().uuidString.prefix(6)
    let transport = TokenSwapTransport(swapTo: new, consumer: "swap-\(unique)")
    let fixture = try NotifyFixture(transport: transport)
    transport.commands.withLock { $0 = fixture.app.commands }
    try fixture.activity("r4", token: old)
    try fixture.update(fixture.snapshot("r4", 5, .delivered))
    await fixture.deliver()
    await fixture.deliver()
    let activity = try #require(try fixture.app.store.activity("r4"))
    #expect(activity.token == new)
    let toNew = transport.sent.withLock { $0.filter { $0.token == new } }
    #expect(
      !toNew.isEmpty || activity.state.ended == false,
      "the new activity is marked ended though it never received the end: it stays on the lock screen")
    #expect(!toNew.isEmpty, "nothing was ever sent to the activity's current token")
  }

  @Test func anOlderTokenEventRedeliveredAfterANewerOneDoesNotReplaceIt() async throws {
    let fixture = try NotifyFixture()
    let handler = NotifyEventHandler(
      commands: fixture.app.commands, consumer: fixture.consumer, logger: .discarding(),
      coalesced: fixture.app.metrics.counter("review_coalesced", help: "test"), wake: {})
    func delivery(_ id: String, sequence: Int64, token: String) throws -> AMQPDelivery {
      let envelope = try EventEnvelope(
        id: id, type: TrackingEventType.liveActivityToken, occurredAt: fixture.clock.now(),
        source: "tracking-service", correlationId: nil, subject: "r5", sequence: sequence,
        payload: LiveActivityToken(orderId: "r5", userId: "u1", hub: "h1", token: token))
      return AMQPDelivery(body: try JSON.encode(envelope), routingKey: TrackingEventType.liveActivityToken)
    }
    let (first, second) = (NotifyFixture.activityToken(106), NotifyFixture.activityToken(107))
    // The first token event failed once and was requeued; the second went through meanwhile.
    #expect(await handler.handle([try delivery("tok-2", sequence: 2, token: second)]) == [.ack])
    #expect(await handler.handle([try delivery("tok-1", sequence: 1, token: first)]) == [.ack])
    #expect(
      try fixture.app.store.activity("r5")?.token == second,
      "an older token replaced the newer one: pushes now go to a dead activity")
  }

  @Test func updatesOfOrdersWithoutALiveActivityDoNotStayPendingForever() async throws {
    let fixture = try NotifyFixture()
    for n in 0..<5 { try fixture.update(fixture.snapshot("nola-\(n)", 1, .placed)) }
    fixture.clock.advance(by: 24 * 3600)
    await fixture.deliver()
    #expect(try fixture.app.store.pendingCount() == 0, "expired updates of orders without a token pile up")
  }

  @Test func noMoreThanTheHourlyBudgetAtPriorityTenInAnySixtyMinutes() {
    let policy = PushPolicy(hourlyBudget: 2)
    let start = Date(timeIntervalSince1970: 1_790_000_000)
    var state = ActivityState(startedAt: start)
    var highAt: [Date] = []
    let statuses: [TrackingStatus] = [.placed, .picking, .problem, .onTheWay, .problem]
    let offsets: [TimeInterval] = [0, 3500, 3601, 3602, 3603]
    for (index, (status, offset)) in zip(statuses, offsets).enumerated() {
      let now = start + offset
      let snapshot = TrackingSnapshot(
        orderId: "b1", version: Int64(index + 1), status: status, problem: nil,
        eta: ETARange(earliest: now + 600, latest: now + 900), rider: nil, destination: nil, generatedAt: now)
      let (decision, next) = policy.decide(snapshot, state: state, now: now)
      if case .send(let push) = decision, push.priority == 10 { highAt.append(now) }
      state = next
    }
    for at in highAt {
      let inHour = highAt.filter { $0 >= at && $0 < at + 3600 }.count
      #expect(inHour <= 2, "\(inHour) priority-10 pushes within an hour from \(at)")
    }
  }
}
