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

  @Test func aRepeatedMessageIdFailsTheWholeAppend() throws {
    let temp = TemporaryDatabase()
    defer { temp.remove() }
    let database = try temp.open()
    #expect(throws: StorageError.self) {
      try database.write { db in try Outbox.append(contentsOf: [message(1), message(2), message(1)], in: db) }
    }
    #expect(try database.read { try Outbox.backlog(in: $0) } == 0)
  }
}
