import Dispatch
import Foundation
import GrocerCore
import Synchronization
import Testing

@testable import GrocerSQLite
@testable import GrocerStorage

@Suite struct SQLiteDatabaseTests {
  static let itemsTable = Migration(
    version: 1, name: "items", sql: "CREATE TABLE items (id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE)")

  @Test func migrationsAreAppliedOnceInOrderAndTheVersionIsRecorded() throws {
    let temp = TemporaryDatabase()
    defer { temp.remove() }
    let migrations = [
      Migration(version: 1, name: "create", sql: "CREATE TABLE log (step TEXT)"),
      Migration(version: 2, name: "first", sql: "INSERT INTO log VALUES ('two')"),
      Migration(
        version: 5, name: "second", sql: "INSERT INTO log VALUES ('five'); INSERT INTO log VALUES ('five.b')"),
    ]
    let database = try temp.open(migrations: migrations)
    #expect(try database.schemaVersion() == 5)
    let steps = try database.read {
      try $0.query("SELECT step FROM log ORDER BY rowid").map { try $0.string(0) }
    }
    #expect(steps == ["two", "five", "five.b"])
    database.close()

    let extended = migrations + [Migration(version: 6, name: "third", sql: "INSERT INTO log VALUES ('six')")]
    let reopened = try temp.open(migrations: extended)
    #expect(try reopened.schemaVersion() == 6)
    let after = try reopened.read {
      try $0.query("SELECT step FROM log ORDER BY rowid").map { try $0.string(0) }
    }
    #expect(after == ["two", "five", "five.b", "six"])
  }

  @Test func writesRunTogetherAllHappenInOrder() throws {
    let temp = TemporaryDatabase()
    defer { temp.remove() }
    let database = try temp.open(migrations: [
      Migration(
        version: 1, name: "two tables",
        sql: "CREATE TABLE a (id INTEGER PRIMARY KEY, n INTEGER); CREATE TABLE b (id INTEGER PRIMARY KEY)")
    ])
    try database.write { db in
      try db.execute("INSERT INTO a (id, n) VALUES (1, 0), (2, 0)")
      try db.executeTogether([
        ("INSERT INTO b (id) VALUES (?), (?)", [7, 8]),
        ("UPDATE a SET n = n + ? WHERE id IN (?, ?)", [5, 1, 2]),
      ])
      #expect(db.changes == 2)
    }
    #expect(
      try database.read { try $0.query("SELECT id FROM b ORDER BY id").map { try $0.int(0) } } == [7, 8])
    #expect(
      try database.read { try $0.query("SELECT n FROM a ORDER BY id").map { try $0.int(0) } } == [5, 5])
  }

  @Test func aFailingMigrationRollsBackAndThrows() throws {
    let temp = TemporaryDatabase()
    defer { temp.remove() }
    let good = Migration(version: 1, name: "good", sql: "CREATE TABLE a (x INTEGER)")
    let bad = Migration(
      version: 2, name: "bad", sql: "CREATE TABLE b (x INTEGER); INSERT INTO missing_table VALUES (1)")
    #expect {
      _ = try temp.open(migrations: [good, bad])
    } throws: { error in
      guard case .migration(let version, let name, _) = error as? StorageError else { return false }
      return version == 2 && name == "bad"
    }
    let database = try temp.open(migrations: [good])
    #expect(try database.schemaVersion() == 1)
    let tables = try database.read {
      try $0.query("SELECT name FROM sqlite_master WHERE type = 'table' AND name IN ('a', 'b')").map {
        try $0.string(0)
      }
    }
    #expect(tables == ["a"])
  }

  @Test func migrationVersionsMustIncrease() throws {
    let temp = TemporaryDatabase()
    defer { temp.remove() }
    #expect {
      _ = try temp.open(migrations: [
        Migration(version: 2, name: "b", sql: "SELECT 1"), Migration(version: 1, name: "a", sql: "SELECT 1"),
      ])
    } throws: { error in
      if case .invalidMigrations = error as? StorageError { return true }
      return false
    }
  }

  @Test func openingCreatesTheFolderTheFrameworkTablesAndUsesWAL() throws {
    let temp = TemporaryDatabase()
    defer { temp.remove() }
    let database = try temp.open(durability: .full)
    #expect(FileManager.default.fileExists(atPath: temp.path))
    let (mode, foreignKeys, synchronous, secureDelete) = try database.write { connection in
      (
        try connection.queryOne("PRAGMA journal_mode")!.string(0),
        try connection.queryOne("PRAGMA foreign_keys")!.int(0),
        try connection.queryOne("PRAGMA synchronous")!.int(0),
        try connection.queryOne("PRAGMA secure_delete")!.int(0)
      )
    }
    #expect(mode == "wal")
    #expect(foreignKeys == 1)
    #expect(synchronous == 2)  // FULL
    #expect(secureDelete == 2)  // FAST: deleted content zeroed only where that costs no writes
    let tables = try database.read {
      try $0.query("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name").map {
        try $0.string(0)
      }
    }
    #expect(tables.contains("outbox") && tables.contains("inbox"))
  }

  /// Commits only signal: the bulk of the log reaches the database file through the
  /// checkpointer's own connection once it passes `checkpointPages` (SQLite's automatic
  /// checkpoint, at 1,000 pages, would not run for these few), and the next commit copies the rest.
  @Test func theLogIsCheckpointedOffTheCommittingThread() async throws {
    let temp = TemporaryDatabase()
    defer { temp.remove() }
    let database = try temp.open(migrations: [Self.blobsTable], checkpointPages: 16)
    let before = temp.fileSize()
    // One commit of 40 blobs: the bulk copy it starts sees the whole log, whenever it runs
    // (with a commit each, a bulk copy could start early and see only the first few).
    try database.write { db in
      for index in 0..<40 { try Self.insertBlob(index, into: db) }
    }
    let deadline = Date().addingTimeInterval(5)
    while database.checkpoints == 0 && Date() < deadline {
      try await Task.sleep(for: .milliseconds(10))
    }
    #expect(database.checkpoints > 0)
    try database.write { try Self.insertBlob(40, into: $0) }
    #expect(temp.fileSize() >= before + 40 * 8_192)
    let count = try database.read { try $0.queryOne("SELECT count(*) FROM blobs")?.int(0) }
    #expect(count == 41)
    database.close()
  }

  /// Under a steady stream of writes the log still starts over: a checkpoint that only chased
  /// the writer would leave it growing by every commit (each blob's pages and frame headers, more
  /// than `written`). The log file keeps its longest length, and on a busy machine the
  /// checkpointer's thread may wait a while before it starts over (a CI run saw 54 % of
  /// `written`), so the bound is three quarters.
  @Test func theLogStartsOverWhileWritesGoOn() throws {
    let temp = TemporaryDatabase()
    defer { temp.remove() }
    let database = try temp.open(migrations: [Self.blobsTable], checkpointPages: 16)
    let written = 2_000 * 8_192
    for index in 0..<2_000 {
      try database.write { try Self.insertBlob(index, into: $0) }
    }
    let log = temp.fileSize("-wal")
    #expect(database.checkpoints > 0)
    #expect(log < written * 3 / 4, "the log holds \(log) bytes after \(written) bytes written")
    database.close()
  }

  static let blobsTable = Migration(
    version: 1, name: "blobs", sql: "CREATE TABLE blobs (id INTEGER PRIMARY KEY, body BLOB)")

  /// Two pages' worth of log a row.
  static func insertBlob(_ index: Int, into db: any SQLConnection) throws {
    try db.execute(
      "INSERT INTO blobs (id, body) VALUES (?, ?)", index, Data(repeating: UInt8(index % 256), count: 8_192))
  }

  @Test func aWriteThatThrowsLeavesNothingBehind() throws {
    let temp = TemporaryDatabase()
    defer { temp.remove() }
    let database = try temp.open(migrations: [Self.itemsTable])
    #expect(throws: TestFailure.self) {
      try database.write { connection in
        try connection.execute("INSERT INTO items (name) VALUES (?)", "apple")
        try connection.execute("INSERT INTO items (name) VALUES (?)", "pear")
        throw TestFailure()
      }
    }
    #expect(try database.read { try $0.queryOne("SELECT count(*) FROM items")!.int(0) } == 0)
    // The writer is usable again afterwards.
    try database.write { try $0.execute("INSERT INTO items (name) VALUES (?)", "plum") }
    #expect(try database.read { try $0.queryOne("SELECT count(*) FROM items")!.int(0) } == 1)
  }

  /// SQLite's one writer already keeps concurrent writers of a row apart: a locking write is a
  /// plain write there, with no clause to add to its SELECTs, committed or rolled back alike.
  @Test func aLockingWriteIsAPlainWrite() throws {
    let temp = TemporaryDatabase()
    defer { temp.remove() }
    let database = try temp.open(migrations: [Self.itemsTable])
    try database.writeLockingRows { db in
      #expect(db.lockClause == "")
      try db.execute("INSERT INTO items (name) VALUES (?)", "apple")
    }
    #expect(throws: TestFailure.self) {
      try database.writeLockingRows { db in
        try db.execute("INSERT INTO items (name) VALUES (?)", "pear")
        throw TestFailure()
      }
    }
    #expect(
      try database.read { try $0.query("SELECT name FROM items").map { try $0.string(0) } } == ["apple"])
  }

  @Test func readsSeeOnlyCommittedData() throws {
    let temp = TemporaryDatabase()
    defer { temp.remove() }
    let database = try temp.open(migrations: [Self.itemsTable])
    let inserted = DispatchSemaphore(value: 0)
    let proceed = DispatchSemaphore(value: 0)
    let done = DispatchGroup()
    done.enter()
    Thread {
      try? database.write { connection in
        try connection.execute("INSERT INTO items (name) VALUES ('apple')")
        inserted.signal()
        proceed.wait()
      }
      done.leave()
    }.start()
    inserted.wait()
    let during = try database.read { try $0.queryOne("SELECT count(*) FROM items")!.int(0) }
    proceed.signal()
    done.wait()
    let after = try database.read { try $0.queryOne("SELECT count(*) FROM items")!.int(0) }
    #expect(during == 0)
    #expect(after == 1)
  }

  @Test func aConstraintViolationIsAStorageErrorAndBadSQLDoesNotCrash() throws {
    let temp = TemporaryDatabase()
    defer { temp.remove() }
    let database = try temp.open(migrations: [Self.itemsTable])
    try database.write { try $0.execute("INSERT INTO items (name) VALUES (?)", "apple") }
    #expect {
      try database.write { try $0.execute("INSERT INTO items (name) VALUES (?)", "apple") }
    } throws: { error in
      guard let error = error as? StorageError, case .constraint(let code, let message) = error else {
        return false
      }
      return error.isConstraintViolation && code == 2067 && message.contains("UNIQUE")
    }
    #expect {
      try database.read { _ = try $0.query("SELEC nonsense") }
    } throws: { error in
      if case .engine(_, let message, _) = error as? StorageError { return message.contains("syntax error") }
      return false
    }
    #expect {
      try database.write { try $0.execute("INSERT INTO items (name) VALUES (?)") }
    } throws: { error in
      if case .misuse = error as? StorageError { return true }
      return false
    }
    #expect {
      try database.write { try $0.execute("SELECT 1; SELECT 2") }
    } throws: { error in
      if case .misuse = error as? StorageError { return true }
      return false
    }
    #expect {
      try database.read { _ = try $0.queryOne("SELECT name FROM items")!.int(0) }
    } throws: { error in
      if case .column = error as? StorageError { return true }
      return false
    }
  }

  @Test func preparedStatementsAreReused() throws {
    let temp = TemporaryDatabase()
    defer { temp.remove() }
    let database = try temp.open(migrations: [Self.itemsTable])
    let prepares = try database.write { any in
      let connection = try #require(any as? SQLiteConnection)
      let before = connection.prepareCount
      for number in 0..<100 {
        try connection.execute("INSERT INTO items (name) VALUES (?)", "item-\(number)")
      }
      return connection.prepareCount - before
    }
    #expect(prepares == 1)
    let names = try database.read { connection in
      try (0..<3).map { _ in try connection.queryOne("SELECT name FROM items WHERE id = ?", 7)!.string("name")
      }
    }
    #expect(names == ["item-6", "item-6", "item-6"])
  }

  @Test func valuesRoundTrip() throws {
    let temp = TemporaryDatabase()
    defer { temp.remove() }
    let database = try temp.open(migrations: [
      Migration(
        version: 1, name: "values",
        sql: "CREATE TABLE v (i INTEGER, r REAL, t TEXT, b BLOB, n TEXT, f INTEGER)")
    ])
    let absent: String? = nil
    let row = try database.write { connection -> SQLRow in
      try connection.execute(
        "INSERT INTO v VALUES (?, ?, ?, ?, ?, ?)", Int64.max, 2.5, "", Data(), absent, true)
      try connection.execute(
        "INSERT INTO v VALUES (?, ?, ?, ?, ?, ?)", 7, 0.25, "héllo ✓", [UInt8]([0, 1, 255]), SQLValue.null,
        false)
      #expect(connection.changes == 1)
      #expect((connection as? SQLiteConnection)?.lastInsertRowID == 2)
      return try connection.queryOne("SELECT * FROM v WHERE rowid = 1")!
    }
    #expect(try row.int64("i") == Int64.max)
    #expect(try row.double("r") == 2.5)
    #expect(try row.string("t") == "")
    #expect(try row.blob("b") == [])
    #expect(try row.isNull("n"))
    #expect(try row.optionalString("n") == nil)
    #expect(try row.bool("f"))
    let second = try database.read { try $0.queryOne("SELECT * FROM v WHERE rowid = ?", 2)! }
    #expect(try second.int(0) == 7)
    #expect(try second.string(2) == "héllo ✓")
    #expect(try second.blob(3) == [0, 1, 255])
    #expect(try second.optionalInt("i") == 7)
    #expect(try second.value(4) == .null)
    #expect(try !second.bool(5))
  }

  @Test func readersRunBesideAWriterAndAlwaysSeeConsistentSnapshots() throws {
    let temp = TemporaryDatabase()
    defer { temp.remove() }
    let database = try temp.open(migrations: [
      Migration(
        version: 1, name: "pair",
        sql: "CREATE TABLE pair (a INTEGER NOT NULL, b INTEGER NOT NULL); INSERT INTO pair VALUES (0, 0)")
    ])
    let writes = 1_000
    let readersStarted = Atomic<Int>(0)
    let inconsistencies = Atomic<Int>(0)
    let readsDuringWrites = Atomic<Int>(0)
    let writerFinished = Atomic<Bool>(false)
    var workers: [@Sendable () -> Void] = []
    workers.append {
      while readersStarted.load(ordering: .acquiring) < 3 { usleep(100) }
      for _ in 0..<writes {
        try? database.write { connection in
          try connection.execute("UPDATE pair SET a = a + 1")
          try connection.execute("UPDATE pair SET b = b + 1")
        }
      }
      writerFinished.store(true, ordering: .releasing)
    }
    for _ in 0..<3 {
      workers.append {
        var last = 0
        var reads = 0
        while !writerFinished.load(ordering: .acquiring) || reads < 50 {
          let pair = try? database.read { connection in
            let row = try connection.queryOne("SELECT a, b FROM pair")!
            return (try row.int(0), try row.int(1))
          }
          reads += 1
          if reads == 1 { readersStarted.add(1, ordering: .releasing) }
          guard let (a, b) = pair, a == b, a >= last else {
            inconsistencies.add(1, ordering: .relaxed)
            continue
          }
          last = a
          if a > 0 && a < writes { readsDuringWrites.add(1, ordering: .relaxed) }
        }
      }
    }
    runOnThreads(workers)
    #expect(inconsistencies.load(ordering: .relaxed) == 0)
    #expect(readsDuringWrites.load(ordering: .relaxed) > 0)
    #expect(try database.read { try $0.queryOne("SELECT a FROM pair")!.int(0) } == writes)
  }

  @Test func asyncVariantsWorkFromManyTasks() async throws {
    let temp = TemporaryDatabase()
    defer { temp.remove() }
    let database = try temp.open(migrations: [Self.itemsTable])
    try await withThrowingTaskGroup(of: Void.self) { group in
      for number in 0..<50 {
        group.addTask {
          try await database.writeAsync {
            try $0.execute("INSERT INTO items (name) VALUES (?)", "n\(number)")
          }
          _ = try await database.readAsync { try $0.queryOne("SELECT count(*) FROM items")!.int(0) }
        }
      }
      try await group.waitForAll()
    }
    #expect(try await database.readAsync { try $0.queryOne("SELECT count(*) FROM items")!.int(0) } == 50)
  }

  @Test func commitObserversRunAfterCommitOnly() throws {
    let temp = TemporaryDatabase()
    defer { temp.remove() }
    let database = try temp.open(migrations: [Self.itemsTable])
    let commits = Atomic<Int>(0)
    database.onCommit { commits.add(1, ordering: .relaxed) }
    try database.write { db in
      try db.execute("INSERT INTO items (name) VALUES ('a')")
      db.wakeCommitObservers()
    }
    try? database.write { db in
      db.wakeCommitObservers()
      throw TestFailure()
    }
    // A commit that did not ask (it wrote no event) wakes nobody, nor does the next one after
    // the rolled-back write that asked.
    try database.write { try $0.execute("INSERT INTO items (name) VALUES ('b')") }
    #expect(commits.load(ordering: .relaxed) == 1)
  }

  @Test func aNestedWriteThrowsInsteadOfDeadlocking() throws {
    let temp = TemporaryDatabase()
    defer { temp.remove() }
    let database = try temp.open(migrations: [Self.itemsTable])
    #expect(throws: StorageError.self) {
      try database.write { _ in try database.write { _ in } }
    }
  }

  @Test func aCommittedWriteSurvivesACrashAndARestart() throws {
    let temp = TemporaryDatabase()
    defer { temp.remove() }
    let first = try temp.open(migrations: [Self.itemsTable], durability: .normal)
    try first.write { try $0.execute("INSERT INTO items (name) VALUES ('apple')") }
    // "Crash": another process opens the files while the first never closed (WAL not checkpointed).
    let afterCrash = try temp.open(migrations: [Self.itemsTable])
    #expect(try afterCrash.read { try $0.queryOne("SELECT name FROM items")?.string(0) } == "apple")
    afterCrash.close()
    first.close()
    // Clean restart.
    let restarted = try temp.open(migrations: [Self.itemsTable])
    #expect(try restarted.read { try $0.queryOne("SELECT count(*) FROM items")!.int(0) } == 1)
    restarted.close()
    #expect(throws: StorageError.closed) { try restarted.read { _ in 1 } }
  }

  @Test func anInMemoryDatabaseReadsThroughTheWriter() throws {
    let database = try SQLiteDatabase(path: ":memory:", migrations: [Self.itemsTable], logger: .discarding())
    try database.write { try $0.execute("INSERT INTO items (name) VALUES ('a')") }
    #expect(try database.read { try $0.queryOne("SELECT count(*) FROM items")!.int(0) } == 1)
  }
}
