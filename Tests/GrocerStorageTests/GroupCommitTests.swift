import Foundation
import GrocerCore
import Synchronization
import Testing

@testable import GrocerStorage

/// Writes queued on the writer queue commit together, each in its own savepoint.
@Suite struct GroupCommitTests {
  static let items = Migration(
    version: 1, name: "items", sql: "CREATE TABLE items (id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE)")

  @Test func concurrentWritesAllCommitAndAFailingOneIsRolledBackAlone() async throws {
    let temp = TemporaryDatabase()
    defer { temp.remove() }
    let database = try temp.open(migrations: [Self.items])
    let commits = Atomic<Int>(0)
    database.onCommit { commits.add(1, ordering: .relaxed) }
    let outcomes = await withTaskGroup(of: (Int, Bool).self) { group in
      for index in 0..<200 {
        group.addTask {
          do {
            try await database.onWriterQueue {
              try database.write { db in
                try db.execute("INSERT INTO items (id, name) VALUES (?, ?)", index, "item-\(index)")
                // Every tenth write breaks a rule after its insert: only it is undone.
                if index % 10 == 0 {
                  try db.execute(
                    "INSERT INTO items (id, name) VALUES (?, ?)", 10_000 + index, "item-\(index)")
                }
              }
            }
            return (index, true)
          } catch {
            return (index, false)
          }
        }
      }
      var all: [Int: Bool] = [:]
      for await (index, ok) in group { all[index] = ok }
      return all
    }
    #expect(outcomes.filter { !$0.value }.keys.sorted() == Array(stride(from: 0, to: 200, by: 10)))
    let stored = try database.read { try $0.query("SELECT id FROM items ORDER BY id").map { try $0.int(0) } }
    #expect(stored == (0..<200).filter { $0 % 10 != 0 })
    // Fewer commits than writes: they were grouped (at least the first one runs alone).
    #expect(commits.load(ordering: .relaxed) >= 1)
    #expect(commits.load(ordering: .relaxed) < 200)
  }

  @Test func afterCommitActionsRunOnceCommittedAndNeverForARolledBackWrite() async throws {
    let temp = TemporaryDatabase()
    defer { temp.remove() }
    let database = try temp.open(migrations: [Self.items])
    let seen = Mutex<[String]>([])
    try database.write { db in
      try db.execute("INSERT INTO items (id, name) VALUES (1, 'a')")
      database.afterCommit {
        // By now the row is visible to readers.
        let visible = (try? database.read { try $0.queryOne("SELECT 1 FROM items WHERE id = 1") }) != nil
        seen.withLock { $0.append("sync committed, visible: \(visible == true)") }
      }
    }
    #expect(throws: TestFailure.self) {
      try database.write { _ in
        database.afterCommit { seen.withLock { $0.append("rolled back") } }
        throw TestFailure()
      }
    }
    _ = try? await database.onWriterQueue {
      try database.write { _ in
        database.afterCommit { seen.withLock { $0.append("savepoint rolled back") } }
        throw TestFailure()
      }
    }
    try await database.onWriterQueue {
      try database.write { db in
        try db.execute("INSERT INTO items (id, name) VALUES (2, 'b')")
        database.afterCommit { seen.withLock { $0.append("batch committed") } }
      }
    }
    #expect(seen.withLock { $0 } == ["sync committed, visible: true", "batch committed"])
  }
}
