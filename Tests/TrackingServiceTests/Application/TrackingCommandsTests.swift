import Foundation
import GrocerContracts
import GrocerCore
import GrocerStorage
import GrocerTestSupport
import Testing

@testable import TrackingService

/// The use cases on each engine (SQLite in a temporary file, PostgreSQL in a fresh database),
/// without the broker or HTTP: each records the new state and its event in one transaction,
/// and the reply cache learns of every commit.
@Suite struct TrackingCommandsTests {
  final class Fixture {
    let location: TestLocation
    let database: any SQLDatabase
    let clock = ManualClock(Date(timeIntervalSince1970: 1_790_000_000))
    let commands: TrackingCommands

    init(_ engine: TestEngine) throws {
      location = try engine.freshLocation("tracking")
      database = try location.open(migrations: TrackingSchema.migrations)
      commands = TrackingCommands(
        store: TrackingStore(database: database), clock: clock, ids: SequentialIDs(prefix: "e"))
    }

    deinit {
      database.close()
      location.remove()
    }

    func start(_ orderId: String = "o1", messageID: String? = nil) throws -> Bool {
      try commands.startTracking(
        OrderConfirmed(
          orderId: orderId, userId: "u1", hub: "h1", cartVersion: 1, lines: [], totals: .zero("EUR"),
          deliverTo: GeoPoint(lat: 52.53, lng: 13.41), paymentId: "pay", placedAt: clock.now()),
        messageID: messageID ?? "m-\(orderId)", consumer: "tracking", correlationID: "c1")
    }

    /// The outbox's events, oldest first: (type, subject, sequence).
    func events() throws -> [(String, String?, Int64?)] {
      try database.read { db in
        try Outbox.pending(limit: 1_000, in: db).map {
          let envelope = try JSON.decode(EventEnvelope.self, from: $0.message.body)
          return (envelope.type, envelope.subject, envelope.sequence)
        }
      }
    }
  }

  @Test(arguments: TestEngine.allCases) func startingTrackingIsOncePerMessageAndOncePerOrder(
    _ engine: TestEngine
  ) throws {
    let f = try Fixture(engine)
    #expect(try f.start())
    #expect(try !f.start())
    #expect(try !f.start(messageID: "other"))
    let record = try #require(try f.commands.store.record("o1"))
    #expect(record.version == 1)
    #expect(f.commands.replies.entry("o1", at: Date())?.version == 1)
    let events = try f.events()
    #expect(events.count == 1)
    #expect(events.first?.0 == TrackingEventType.updated)
    #expect(events.first?.2 == 1)
  }

  @Test(arguments: TestEngine.allCases) func aMoveSavesTheVersionAndItsEventTogether(_ engine: TestEngine)
    throws
  {
    let f = try Fixture(engine)
    _ = try f.start()
    f.clock.advance(by: 30)
    let revision = try f.commands.move("o1", by: .picking, correlationID: nil)
    guard case .changed(let record, let changed) = revision else {
      Issue.record("picking was not a change")
      return
    }
    #expect(changed.first == .stage)
    #expect(try f.commands.store.record("o1") == record)
    #expect(f.commands.replies.entry("o1", at: Date())?.version == 2)
    #expect(try f.events().map(\.2) == [1, 2])
    // The same move again changes nothing and publishes nothing.
    #expect(try f.commands.move("o1", by: .picking, correlationID: nil) == .unchanged(record))
    #expect(try f.events().count == 2)
  }

  @Test(arguments: TestEngine.allCases) func aRefusedMoveWritesNothing(_ engine: TestEngine) throws {
    let f = try Fixture(engine)
    _ = try f.start()
    #expect(throws: TrackingError.self) { try f.commands.move("o1", by: .delivered, correlationID: nil) }
    #expect(throws: TrackingError.notFound("o1")) {
      try f.commands.move("o1", by: .picking, correlationID: nil) { _ in throw TrackingError.notFound("o1") }
    }
    #expect(throws: TrackingError.notFound("o9")) {
      try f.commands.move("o9", by: .picking, correlationID: nil)
    }
    #expect(try f.commands.store.record("o1")?.version == 1)
    #expect(try f.events().count == 1)
  }

  @Test(arguments: TestEngine.allCases) func anOlderFixIsIgnored(_ engine: TestEngine) throws {
    let f = try Fixture(engine)
    _ = try f.start()
    _ = try f.commands.move("o1", by: .picking, correlationID: nil)
    _ = try f.commands.move(
      "o1", by: .onTheWay(rider: AssignedRider(id: "r7", firstName: "Ana")), correlationID: nil)
    let at = f.clock.now()
    guard
      case .changed = try f.commands.recordFix(
        for: "o1", lat: 52.52, lng: 13.40, recordedAt: at, correlationID: nil)
    else {
      Issue.record("a first fix was not a change")
      return
    }
    guard
      case .unchanged = try f.commands.recordFix(
        for: "o1", lat: 52.0, lng: 13.0, recordedAt: at - 5, correlationID: nil)
    else {
      Issue.record("an older fix was taken")
      return
    }
    #expect(try f.commands.store.record("o1")?.fix?.lat == 52.52)
  }

  @Test(arguments: TestEngine.allCases) func lateETAsMoveForwardOnceEach(_ engine: TestEngine) throws {
    let f = try Fixture(engine)
    _ = try f.start("o1")
    _ = try f.start("o2")
    #expect(try f.commands.refreshLateETAs() == 0)
    f.clock.advance(by: 3600)
    #expect(try f.commands.refreshLateETAs() == 2)
    #expect(try f.commands.refreshLateETAs() == 0)
    #expect(try f.commands.store.record("o1")?.version == 2)
  }

  @Test(arguments: TestEngine.allCases) func aLiveActivityTokenIsPublishedOnceWithItsOwnSequence(
    _ engine: TestEngine
  ) throws {
    let f = try Fixture(engine)
    _ = try f.start()
    #expect(try f.commands.setLiveActivityToken("ab", for: "o1", correlationID: nil))
    #expect(try !f.commands.setLiveActivityToken("ab", for: "o1", correlationID: nil))
    #expect(try f.commands.setLiveActivityToken("cd", for: "o1", correlationID: nil))
    #expect(throws: TrackingError.notFound("o1")) {
      try f.commands.setLiveActivityToken("ef", for: "o1", correlationID: nil) { _ in
        throw TrackingError.notFound("o1")
      }
    }
    let tokens = try f.events().filter { $0.0 == TrackingEventType.liveActivityToken }
    #expect(tokens.map(\.2) == [1, 2])
    #expect(try f.commands.store.record("o1")?.liveActivityToken == "cd")
  }
}
