import Foundation
import GrocerContracts
import GrocerCore
import GrocerSQLite
import GrocerStorage
import Testing

@testable import TrackingService

/// The use cases against SQLite in a temporary file, without the broker or HTTP: each records
/// the new state and its event in one transaction, and the reply cache learns of every commit.
@Suite struct TrackingCommandsTests {
  let database: SQLiteDatabase
  let clock = ManualClock(Date(timeIntervalSince1970: 1_790_000_000))
  let commands: TrackingCommands

  init() throws {
    let path = NSTemporaryDirectory() + "grocer-tracking-commands-\(UUID().uuidString.prefix(8)).sqlite"
    database = try SQLiteDatabase(path: path, migrations: TrackingSchema.migrations, logger: .discarding())
    commands = TrackingCommands(
      store: TrackingStore(database: database), clock: clock, ids: SequentialIDs(prefix: "e"))
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

  @Test func startingTrackingIsOncePerMessageAndOncePerOrder() throws {
    #expect(try start())
    #expect(try !start())
    #expect(try !start(messageID: "other"))
    let record = try #require(try commands.store.record("o1"))
    #expect(record.version == 1)
    #expect(commands.replies.entry("o1")?.version == 1)
    let events = try events()
    #expect(events.count == 1)
    #expect(events.first?.0 == TrackingEventType.updated)
    #expect(events.first?.2 == 1)
  }

  @Test func aMoveSavesTheVersionAndItsEventTogether() throws {
    _ = try start()
    clock.advance(by: 30)
    let revision = try commands.move("o1", by: .picking, correlationID: nil)
    guard case .changed(let record, let changed) = revision else {
      Issue.record("picking was not a change")
      return
    }
    #expect(changed.first == .stage)
    #expect(try commands.store.record("o1") == record)
    #expect(commands.replies.entry("o1")?.version == 2)
    #expect(try events().map(\.2) == [1, 2])
    // The same move again changes nothing and publishes nothing.
    #expect(try commands.move("o1", by: .picking, correlationID: nil) == .unchanged(record))
    #expect(try events().count == 2)
  }

  @Test func aRefusedMoveWritesNothing() throws {
    _ = try start()
    #expect(throws: TrackingError.self) { try commands.move("o1", by: .delivered, correlationID: nil) }
    #expect(throws: TrackingError.notFound("o1")) {
      try commands.move("o1", by: .picking, correlationID: nil) { _ in throw TrackingError.notFound("o1") }
    }
    #expect(throws: TrackingError.notFound("o9")) {
      try commands.move("o9", by: .picking, correlationID: nil)
    }
    #expect(try commands.store.record("o1")?.version == 1)
    #expect(try events().count == 1)
  }

  @Test func anOlderFixIsIgnored() throws {
    _ = try start()
    _ = try commands.move("o1", by: .picking, correlationID: nil)
    _ = try commands.move(
      "o1", by: .onTheWay(rider: AssignedRider(id: "r7", firstName: "Ana")), correlationID: nil)
    let at = clock.now()
    guard
      case .changed = try commands.recordFix(
        for: "o1", lat: 52.52, lng: 13.40, recordedAt: at, correlationID: nil)
    else {
      Issue.record("a first fix was not a change")
      return
    }
    guard
      case .unchanged = try commands.recordFix(
        for: "o1", lat: 52.0, lng: 13.0, recordedAt: at - 5, correlationID: nil)
    else {
      Issue.record("an older fix was taken")
      return
    }
    #expect(try commands.store.record("o1")?.fix?.lat == 52.52)
  }

  @Test func lateETAsMoveForwardOnceEach() throws {
    _ = try start("o1")
    _ = try start("o2")
    #expect(try commands.refreshLateETAs() == 0)
    clock.advance(by: 3600)
    #expect(try commands.refreshLateETAs() == 2)
    #expect(try commands.refreshLateETAs() == 0)
    #expect(try commands.store.record("o1")?.version == 2)
  }

  @Test func aLiveActivityTokenIsPublishedOnceWithItsOwnSequence() throws {
    _ = try start()
    #expect(try commands.setLiveActivityToken("ab", for: "o1", correlationID: nil))
    #expect(try !commands.setLiveActivityToken("ab", for: "o1", correlationID: nil))
    #expect(try commands.setLiveActivityToken("cd", for: "o1", correlationID: nil))
    #expect(throws: TrackingError.notFound("o1")) {
      try commands.setLiveActivityToken("ef", for: "o1", correlationID: nil) { _ in
        throw TrackingError.notFound("o1")
      }
    }
    let tokens = try events().filter { $0.0 == TrackingEventType.liveActivityToken }
    #expect(tokens.map(\.2) == [1, 2])
    #expect(try commands.store.record("o1")?.liveActivityToken == "cd")
  }
}
