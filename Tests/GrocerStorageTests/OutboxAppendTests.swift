import Foundation
import Testing

@testable import GrocerStorage

@Suite struct OutboxAppendTests {
  @Test func severalMessagesAreAppendedInTheirOrderAsOneWouldOneByOne() throws {
    let temp = TemporaryDatabase()
    defer { temp.remove() }
    let database = try temp.open()
    // 150 rows: more than one statement's run (64), and runs of several sizes.
    try database.write { db in
      try Outbox.append(message(0), in: db)
      try Outbox.append(contentsOf: (1...150).map { message($0) }, in: db)
      try Outbox.append(contentsOf: [], in: db)
    }
    let pending = try database.read { try Outbox.pending(limit: 1000, in: $0) }
    #expect(pending.map(\.message.messageID) == (0...150).map { "msg-\($0)" })
    #expect(pending.map(\.message.body) == (0...150).map { message($0).body })
    #expect(pending.map(\.seq) == pending.map(\.seq).sorted())
  }

  @Test func anOutboxMadeWithAUniqueMessageIdIsRebuiltWithItsRowsAndItsCounter() throws {
    let temp = TemporaryDatabase()
    defer { temp.remove() }
    // The outbox as it was made before `message_id` lost its index, with a gap at the end.
    let old = try temp.open()
    try old.write { db in
      try db.execute("DROP TABLE outbox")
      try db.execute(
        """
        CREATE TABLE outbox (
          seq INTEGER PRIMARY KEY AUTOINCREMENT, message_id TEXT NOT NULL UNIQUE,
          exchange TEXT NOT NULL, routing_key TEXT NOT NULL, type TEXT NOT NULL, correlation_id TEXT,
          timestamp REAL NOT NULL, body BLOB NOT NULL,
          created_at REAL NOT NULL DEFAULT ((julianday('now') - 2440587.5) * 86400.0))
        """)
      try Outbox.append(contentsOf: (1...3).map { message($0) }, in: db)
      try db.execute("DELETE FROM outbox WHERE seq = 3")
    }
    old.close()

    let database = try temp.open()
    defer { database.close() }
    let indexes = try database.read {
      try $0.queryOne("SELECT count(*) FROM sqlite_master WHERE type = 'index' AND tbl_name = 'outbox'")?.int(
        0)
    }
    #expect(indexes == 0)
    // The rows stay, and `seq` goes on after the highest ever given (3), not the highest kept.
    try database.write { db in try Outbox.append(contentsOf: [message(1), message(4)], in: db) }
    let pending = try database.read { try Outbox.pending(limit: 10, in: $0) }
    #expect(pending.map(\.seq) == [1, 2, 4, 5])
    #expect(pending.map(\.message.messageID) == ["msg-1", "msg-2", "msg-1", "msg-4"])
    #expect(pending.map(\.message.body) == [1, 2, 1, 4].map { message($0).body })
  }
}
