import Foundation
import GrocerCore
import GrocerStorage
import GrocerTestSupport
import Synchronization
import Testing

@testable import GrocerPostgres

/// `writeEach` on both engines: a consumer's batch commits together, and each job still gets
/// its own outcome.
@Suite(.serialized) struct WriteEachTests {
  static let items = Migration(
    version: 1, name: "items",
    sql: """
      CREATE TABLE items (id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE);
      CREATE TABLE counters (id INTEGER PRIMARY KEY, value INTEGER NOT NULL);
      """)

  func withDatabase(_ engine: TestEngine, _ body: (any SQLDatabase, TestLocation) async throws -> Void)
    async throws
  {
    let location = try engine.freshLocation("writeeach")
    defer { location.remove() }
    let database = try location.open(migrations: [Self.items])
    defer { database.close() }
    try await body(database, location)
  }

  /// The transaction a PostgreSQL write runs in; nil on SQLite (one writer, nothing to tell).
  static func transactionID(_ db: any SQLConnection) throws -> String? {
    guard db.dialect == .postgresql else { return nil }
    return try db.queryOne("SELECT pg_current_xact_id()::text")?.string(0)
  }

  @Test(arguments: TestEngine.allCases)
  func jobsThatAllRunThroughCommitInOneTransaction(engine: TestEngine) async throws {
    try await withDatabase(engine) { database, _ in
      let transactions = Mutex<[String?]>([])
      let committed = Mutex<[Int]>([])
      let wakes = Atomic<Int>(0)
      database.onCommit { wakes.add(1, ordering: .relaxed) }
      try await Task.sleep(for: .milliseconds(300))
      let before = wakes.load(ordering: .relaxed)
      let jobs: [@Sendable () throws -> Void] = (1...3).map { id in
        {
          try database.write { db in
            try db.execute("INSERT INTO items (id, name) VALUES (?, ?)", id, "item-\(id)")
            db.wakeCommitObservers()
            let transaction = try Self.transactionID(db)
            transactions.withLock { $0.append(transaction) }
            database.afterCommit { committed.withLock { $0.append(id) } }
          }
        }
      }
      let results = try await database.writeEach(jobs)
      #expect(results.map { $0 == nil } == [true, true, true])
      #expect(committed.withLock { $0 } == [1, 2, 3])
      let stored = try database.read {
        try $0.query("SELECT id FROM items ORDER BY id").map { try $0.int(0) }
      }
      #expect(stored == [1, 2, 3])
      if engine == .postgres {
        #expect(Set(transactions.withLock { $0 }).count == 1)
        // One commit, one wake for it.
        #expect(await eventually { wakes.load(ordering: .relaxed) == before + 1 })
      }
    }
  }

  @Test(arguments: TestEngine.allCases)
  func aJobThatThrowsIsUndoneAloneAndTheOthersCommit(engine: TestEngine) async throws {
    try await withDatabase(engine) { database, _ in
      let committed = Mutex<[Int]>([])
      let job: @Sendable (Int) -> @Sendable () throws -> Void = { id in
        {
          try database.write { db in
            try db.execute("INSERT INTO items (id, name) VALUES (?, ?)", id, "item-\(id)")
            database.afterCommit { committed.withLock { $0.append(id) } }
            if id == 2 { throw TestError() }
          }
        }
      }
      // A write inside a write is refused in a batch too.
      let nested: @Sendable () throws -> Void = {
        try database.write { _ in try database.write { _ in } }
      }
      let results = try await database.writeEach([job(1), job(2), nested, job(3)])
      #expect(results[0] == nil && results[3] == nil)
      #expect(results[1] is TestError)
      #expect(results[2] is StorageError)
      let stored = try database.read {
        try $0.query("SELECT id FROM items ORDER BY id").map { try $0.int(0) }
      }
      #expect(stored == [1, 3])
      #expect(committed.withLock { $0 } == [1, 3])
    }
  }

  /// A row another writer changed after the batch's snapshot fails the batch (40001); the jobs
  /// then run alone, each write retried as usual, and no increment is lost.
  @Test func aConflictInsideTheBatchRunsTheJobsAgainAloneAndLosesNothing() async throws {
    try await withDatabase(.postgres) { database, location in
      guard case .postgres(let url) = location.location else { return }
      try database.write { try $0.execute("INSERT INTO counters VALUES (1, 0), (2, 0)") }
      let other = try PostgresDatabase(url: url, migrations: [Self.items], logger: .discarding())
      defer { other.close() }
      let interfered = Atomic<Bool>(false)
      let increment: @Sendable (Int) -> @Sendable () throws -> Void = { id in
        {
          try database.write { db in
            let value = try db.queryOne("SELECT value FROM counters WHERE id = ?", id)!.int(0)
            // Once, after the batch's snapshot was taken: another process changes counter 2.
            if id == 1, !interfered.exchange(true, ordering: .relaxed) {
              try other.write { try $0.execute("UPDATE counters SET value = value + 10 WHERE id = 2") }
            }
            try db.execute("UPDATE counters SET value = ? WHERE id = ?", value + 1, id)
          }
        }
      }
      let results = try await database.writeEach([increment(1), increment(2)])
      #expect(results.map { $0 == nil } == [true, true])
      let values = try database.read {
        try $0.query("SELECT value FROM counters ORDER BY id").map { try $0.int(0) }
      }
      #expect(values == [1, 11])
    }
  }
}
