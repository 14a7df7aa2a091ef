import Foundation
import GrocerAMQP
import GrocerContracts
import GrocerCore
import GrocerRabbitMQ
import GrocerRuntime
import GrocerStorage
import GrocerTestSupport
import Testing

@testable import TrackingService

/// `order.confirmed` in, `tracking.updated` out, through the real broker.
@Suite(.serialized) struct TrackingEventFlowTests {
  init() throws { try TestBroker.ensureRunning() }

  @Test(arguments: TestEngine.allCases)
  func anOrderConfirmedOnTheBrokerBecomesTrackingAndItsChangesGoOutInVersionOrder(_ engine: TestEngine)
    async throws
  {
    let fixture = try TrackingFixture(engine: engine)
    // A queue of the test's own, bound like NotifyGateway's would be.
    let listener = uniqueName("tracking-listener")
    let received = Recorder<EventEnvelope>()
    let consumer = AMQPConsumer(
      configuration: TestBroker.configuration("\(listener)-consumer"),
      queue: QueueSpec(
        name: listener, bindingKeys: [TrackingEventType.updated, TrackingEventType.liveActivityToken],
        kind: .durableQuorum(expiresAfter: .seconds(600))),
      logger: .discarding(), metrics: MetricsRegistry()
    ) { delivery in
      if let envelope = try? JSON.decode(EventEnvelope.self, from: delivery.body) {
        received.append(envelope)
      }
      return .ack
    }
    try await consumer.start()
    try await fixture.start()
    try await withCleanup({
      await consumer.shutdown()
      await fixture.stop()
      try? await AMQPAdmin.deleteQueues(
        configuration: TestBroker.configuration(), [listener, "\(listener).parking"])
    }) {
      #expect(await consumer.waitUntilConnected())
      let orderId = "ord-\(UUID().uuidString.prefix(8))"
      // Published twice: a redelivery must not create a second snapshot.
      try await fixture.publishConfirmed(orderId, copies: 2)

      let created = await eventually(timeout: .seconds(15)) {
        (try? fixture.app.store.record(orderId)) != nil
      }
      try #require(created, "order.confirmed never became tracking")
      _ = await fixture.status(orderId, #"{"status":"picking"}"#)
      _ = await fixture.status(orderId, #"{"status":"onTheWay","rider":{"id":"r7","firstName":"Ana"}}"#)
      _ = await fixture.status(orderId, #"{"status":"arriving"}"#, as: fixture.rider())
      _ = await fixture.status(orderId, #"{"status":"delivered"}"#, as: fixture.rider())

      let all = await eventually(timeout: .seconds(15)) {
        received.all.filter {
          $0.subject == "tracking/" + orderId && $0.source == fixture.configuration.serviceName
        }.count
          >= 5
      }
      #expect(all)
      // Delivery is at least once (a publish whose confirm came late is published again, with
      // the same id): consumers dedupe by id. What must hold: one event per version, in order.
      var seen = Set<String>()
      let updates = received.all.filter {
        // Another TrackingService on this broker (`make run`'s) tracks the order too: only this
        // one's events count.
        $0.subject == "tracking/" + orderId && $0.type == TrackingEventType.updated
          && $0.source == fixture.configuration.serviceName && seen.insert($0.id).inserted
      }
      #expect(
        updates.map(\.sequence) == [1, 2, 3, 4, 5],
        "one event per version, in version order: \(updates.map { "\($0.id) \($0.sequence) \($0.data)" })")
      #expect(updates.first?.correlationId == "req-1", "the order's request id carried on")
      let last = try #require(try updates.last?.payload(as: TrackingUpdated.self))
      #expect(last.snapshot.status == .delivered)
      #expect(last.userId == "u1")
      #expect(try fixture.app.store.record(orderId)?.version == 5)
    }
  }

  /// NotifyGateway's `push.delivered` and `push.failed` reach the snapshot through the broker;
  /// an alert's outcome and one published twice change nothing more.
  @Test func pushOutcomesOnTheBrokerSayWhatTheLockScreenShows() async throws {
    let fixture = try TrackingFixture()
    try await fixture.start()
    try await withCleanup({ await fixture.stop() }) {
      let orderId = "ord-\(UUID().uuidString.prefix(8))"
      try fixture.place(orderId)
      let token = String(repeating: "ab", count: 40)
      _ = try fixture.app.commands.setLiveActivityToken(token, for: orderId, correlationID: nil)
      let delivered = fixture.pushOutcome(orderId, token: token, status: 200, version: 1)
      var alert = fixture.pushOutcome(orderId, token: "cd01", status: 410, version: 1, reason: "Unregistered")
      alert.tokenKind = .device
      alert.pushType = "alert"
      let message = delivered.message(id: "evt-push-\(orderId)", delivered: true)
      try await fixture.publish([
        message, message, alert.message(id: "evt-alert-\(orderId)", delivered: false),
      ])
      let current = await eventually(timeout: .seconds(15)) {
        (try? await fixture.tracking(orderId).liveActivity?.state) == .current
          && (try? fixture.app.store.record(orderId)?.liveActivity.lastPushAt) != nil
      }
      #expect(current, "push.delivered never reached the snapshot")
      fixture.clock.advance(by: 2)
      let failed = fixture.pushOutcome(
        orderId, token: token, status: 429, version: 2, reason: "TooManyRequests")
      try await fixture.publish([failed.message(id: "evt-failed-\(orderId)", delivered: false)])
      let stale = await eventually(timeout: .seconds(15)) {
        (try? await fixture.tracking(orderId).liveActivity?.state) == .stale
      }
      #expect(stale, "push.failed never reached the snapshot")
      #expect(
        try fixture.app.store.record(orderId)?.liveActivity.revision == 3, "token, delivered once, failed")
    }
  }

  /// Two replicas on one PostgreSQL: a stream open on one gets the changes made through the
  /// other, fed by `tracking.updated`, in order and without repeats.
  @Test func aStreamOnOneReplicaFollowsTheOtherReplicasChanges() async throws {
    let location = try TestEngine.postgres.freshLocation("tracking")
    defer { location.remove() }
    let writer = try TrackingFixture(sharing: location)
    let reader = try TrackingFixture(sharing: location, clock: writer.clock)
    try await writer.start()
    try await reader.start()
    try await withCleanup({
      await reader.stop()
      await writer.stop()
    }) {
      try writer.place("o1")
      let stream = try await reader.stream("o1")
      let first = await stream.read { $0.contains("id: 1\n") }
      let picking = await writer.status("o1", #"{"status":"picking"}"#).status
      let cancelled = await writer.status("o1", #"{"status":"cancelled","reason":"rain"}"#).status
      let ended = await stream.read(timeout: .seconds(15)) { _ in stream.isEnded }
      let text = stream.text
      #expect(first && picking == 200 && cancelled == 200)
      #expect(ended, "the other replica's changes never reached the stream: \(text)")
      #expect(stream.events.compactMap { $0["id"] } == ["1", "2", "3"])
    }
  }

  /// The database goes away (a restart, a failover) while `order.confirmed` waits: the consumer
  /// holds the message and tries it again, longer than the delivery limit's returns would last,
  /// instead of returning it until the broker parks it; once the database is back it is applied.
  @Test func anEventThatArrivesWhileTheDatabaseIsDownWaitsForItInsteadOfBeingParked() async throws {
    let location = try TestEngine.postgres.freshLocation("tracking")
    defer { location.remove() }
    guard case .postgres(let url) = location.location else { return }
    let fixture = try TrackingFixture(sharing: location)
    try await fixture.start()
    let queue = fixture.configuration.serviceName
    let configuration = TestBroker.configuration()
    try await withCleanup({
      await fixture.stop()
      try? await AMQPAdmin.deleteQueues(configuration: configuration, [queue, "\(queue).parking"])
    }) {
      try await TestPostgres.takeAway(url)
      let orderId = "ord-\(UUID().uuidString.prefix(8))"
      try await fixture.publishConfirmed(orderId)

      // Returned at once each time, six deliveries would be parked within a second.
      try await Task.sleep(for: .seconds(3))
      #expect(try await AMQPAdmin.messageCount(configuration: configuration, queue: "\(queue).parking") == 0)
      try TestPostgres.bringBack(url)
      let created = await eventually(timeout: .seconds(15)) {
        (try? fixture.app.store.record(orderId)) != nil
      }
      #expect(created, "order.confirmed was not applied once the database came back")
      #expect(try await AMQPAdmin.messageCount(configuration: configuration, queue: "\(queue).parking") == 0)
    }
  }
}
