import Foundation
import GrocerCore
import Testing

@testable import GrocerStorage

@Suite struct InboxTests {
  static let effects = Migration(
    version: 1, name: "effects",
    sql: "CREATE TABLE effects (message_id TEXT NOT NULL, amount INTEGER NOT NULL)")
  let now = Date(timeIntervalSince1970: 1_790_000_000)

  @Test func aMessageIsClaimedOncePerConsumer() throws {
    let temp = TemporaryDatabase()
    defer { temp.remove() }
    let database = try temp.open()
    let results = try database.write { connection in
      [
        try Inbox.claim(messageID: "m1", consumer: "orders", at: now, in: connection),
        try Inbox.claim(messageID: "m1", consumer: "orders", at: now, in: connection),
        try Inbox.claim(messageID: "m1", consumer: "tracking", at: now, in: connection),
      ]
    }
    #expect(results == [true, false, true])
    #expect(
      try database.write { try Inbox.claim(messageID: "m1", consumer: "orders", at: now, in: $0) } == false)
  }

  @Test func aRedeliveredMessageHasNoSecondEffect() throws {
    let temp = TemporaryDatabase()
    defer { temp.remove() }
    let database = try temp.open(migrations: [Self.effects])
    func handle(_ id: String) throws {
      try database.write { connection in
        guard try Inbox.claim(messageID: id, consumer: "stock", at: now, in: connection) else { return }
        try connection.execute("INSERT INTO effects VALUES (?, 5)", id)
      }
    }
    try handle("m1")
    try handle("m1")
    try handle("m2")
    #expect(try database.read { try $0.queryOne("SELECT sum(amount) FROM effects")!.int(0) } == 10)
  }

  @Test func aRolledBackEffectLeavesNeitherTheEffectNorTheClaim() throws {
    let temp = TemporaryDatabase()
    defer { temp.remove() }
    let database = try temp.open(migrations: [Self.effects])
    #expect(throws: TestFailure.self) {
      try database.write { connection in
        #expect(try Inbox.claim(messageID: "m1", consumer: "stock", at: now, in: connection))
        try connection.execute("INSERT INTO effects VALUES ('m1', 5)")
        throw TestFailure()
      }
    }
    let (claimed, effects) = try database.read { connection in
      (
        try Inbox.contains(messageID: "m1", consumer: "stock", in: connection),
        try connection.queryOne("SELECT count(*) FROM effects")!.int(0)
      )
    }
    #expect(!claimed)
    #expect(effects == 0)
    // The redelivery is then processed.
    #expect(try database.write { try Inbox.claim(messageID: "m1", consumer: "stock", at: now, in: $0) })
  }

  @Test func purgeForgetsOnlyOldClaims() throws {
    let temp = TemporaryDatabase()
    defer { temp.remove() }
    let database = try temp.open()
    try database.write { connection in
      _ = try Inbox.claim(
        messageID: "old", consumer: "c", at: now.addingTimeInterval(-90_000), in: connection)
      _ = try Inbox.claim(messageID: "new", consumer: "c", at: now, in: connection)
    }
    let removed = try database.write { try Inbox.purge(olderThan: now.addingTimeInterval(-86_400), in: $0) }
    #expect(removed == 1)
    let (old, new) = try database.read { connection in
      (
        try Inbox.contains(messageID: "old", consumer: "c", in: connection),
        try Inbox.contains(messageID: "new", consumer: "c", in: connection)
      )
    }
    #expect(!old)
    #expect(new)
  }
}
