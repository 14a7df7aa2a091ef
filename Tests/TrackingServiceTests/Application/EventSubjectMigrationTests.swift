import Foundation
import GrocerContracts
import GrocerCore
import GrocerStorage
import GrocerTestSupport
import Testing

@testable import TrackingService

/// Events written before subjects named their kind, still in the outbox at the upgrade, leave
/// with `tracking/<id>` and `liveActivity/<id>`: one counter per subject again.
@Suite struct EventSubjectMigrationTests {
  @Test(arguments: TestEngine.allCases)
  func pendingEventsGainTheirKind(_ engine: TestEngine) throws {
    let location = try engine.freshLocation("subjects")
    defer { location.remove() }
    let before = try location.open(migrations: Array(TrackingSchema.migrations.prefix(1)))
    func old(_ id: String, _ type: String, sequence: Int64) throws -> OutgoingMessage {
      try EventEnvelope.message(
        id: id, type: type, occurredAt: Date(timeIntervalSince1970: 1_790_000_000),
        source: "tracking-service",
        correlationId: nil, subject: "ord_1", sequence: sequence, payload: ["orderId": "ord_1"])
    }
    try before.write { db in
      try Outbox.append(try old("e1", TrackingEventType.updated, sequence: 2), in: db)
      try Outbox.append(try old("e2", TrackingEventType.liveActivityToken, sequence: 1), in: db)
      try Outbox.append(try old("e3", "other.kind", sequence: 1), in: db)
    }
    before.close()

    let after = try location.open(migrations: TrackingSchema.migrations)
    defer { after.close() }
    let pending = try after.read { try Outbox.pending(limit: 10, in: $0) }
    let envelopes = try pending.map { try JSON.decode(EventEnvelope.self, from: $0.message.body) }
    #expect(envelopes.map(\.subject) == ["tracking/ord_1", "liveActivity/ord_1", "ord_1"])
    #expect(envelopes.map(\.sequence) == [2, 1, 1])
    #expect(envelopes[0].data == .object(["orderId": .string("ord_1")]))
  }
}
