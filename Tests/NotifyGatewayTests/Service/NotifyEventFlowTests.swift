import Foundation
import GrocerAMQP
import GrocerContracts
import GrocerCore
import GrocerHTTP
import GrocerHTTPServer
import GrocerRabbitMQ
import GrocerRuntime
import GrocerTestSupport
import Testing

@testable import NotifyGateway

/// `liveActivity.token` and `tracking.updated` through the real broker to the simulator's record.
@Suite(.serialized) struct NotifyEventFlowTests {
  init() throws { try TestBroker.ensureRunning() }

  @Test func trackingUpdatesOnTheBrokerReachTheLiveActivity() async throws {
    let fixture = try NotifyFixture(clock: ManualClock(Date()))
    for service in fixture.app.services where !(service is HTTPServer) { try await service.start() }
    let publisher = AMQPPublisher(
      configuration: TestBroker.configuration("\(fixture.consumer)-publisher"), logger: .discarding(),
      metrics: MetricsRegistry())
    try await publisher.start()
    try await withCleanup({
      await publisher.shutdown()
      for service in fixture.app.services.reversed() where !(service is HTTPServer) {
        await service.shutdown()
      }
      try? await AMQPAdmin.deleteQueues(
        configuration: TestBroker.configuration(), [fixture.consumer, "\(fixture.consumer).parking"])
    }) {
      let ready = await eventually(timeout: .seconds(15)) {
        await fixture.client.get("/health/ready").status == 200
      }
      try #require(ready)
      #expect(await publisher.waitUntilConnected())
      let orderId = "ord-\(UUID().uuidString.prefix(8))"
      let token = NotifyFixture.activityToken(Int.random(in: 1...1_000_000))
      func envelope(_ type: String, _ sequence: Int64, _ payload: some Encodable) throws -> OutgoingMessage {
        try EventEnvelope(
          id: "\(orderId)-\(type)-\(sequence)", type: type, occurredAt: Date(), source: "test",
          correlationId: nil,
          subject: orderId, sequence: sequence, payload: payload
        ).message()
      }
      func update(_ version: Int64, _ status: TrackingStatus) throws -> OutgoingMessage {
        try envelope(
          TrackingEventType.updated, version,
          TrackingUpdated(
            userId: "u1", hub: "h1", snapshot: fixture.snapshot(orderId, version, status), changed: [.stage],
            previousStatus: .placed))
      }
      try await publisher.publish([
        try envelope(
          TrackingEventType.liveActivityToken, 1,
          LiveActivityToken(orderId: orderId, userId: "u1", hub: "h1", token: token)),
        try update(1, .placed),
      ])
      #expect(await eventually(timeout: .seconds(15)) { fixture.received(token).count == 1 })
      try await publisher.publish([try update(2, .picking), try update(3, .delivered)])
      let ended = await eventually(timeout: .seconds(15)) {
        fixture.received(token).last.map { String(describing: $0.payload).contains("end") } == true
      }
      #expect(ended)
      let statuses = fixture.received(token).map { String(describing: $0.payload) }
      #expect(statuses.first?.contains("placed") == true)
      #expect(statuses.count <= 3, "picking may be coalesced into the end, never sent after it")
      #expect(fixture.received(token).allSatisfy { $0.status == 200 })
      #expect(
        fixture.app.metrics.render().contains(
          "pushes_total{priority=\"10\",result=\"ok\",type=\"liveactivity\"}"))
    }
  }
}
