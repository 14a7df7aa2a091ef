import Foundation
import GrocerCore
import GrocerRuntime
import GrocerStorage
import GrocerTestSupport
import Synchronization
import Testing

@testable import GrocerPostgres

/// The PostgreSQL engine against a real server (`deploy/local/postgres.sh`), one fresh database
/// per test: the same promises `SQLiteDatabase` keeps, through the same protocol.
@Suite(.serialized) struct PostgresDatabaseTests {
  static let items = Migration(
    version: 1, name: "items",
    sql: "CREATE TABLE items (id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE)")

  static let counters = Migration(
    version: 1, name: "counters",
    sql: "CREATE TABLE counters (id INTEGER PRIMARY KEY, value INTEGER NOT NULL)")

  /// A fresh database with the counters table and a pool of 6, for tests of concurrent writers.
  func withCounters(_ body: (PostgresDatabase) async throws -> Void) async throws {
    let url = try TestPostgres.freshDatabase("storage")
    defer { TestPostgres.drop(url) }
    let database = try PostgresDatabase(
      url: url, migrations: [Self.counters], poolSize: 6, logger: .discarding())
    defer { database.close() }
    try await body(database)
  }

  /// Opens a fresh database, runs `body`, then closes and drops it.
  func withDatabase<T>(
    _ migrations: [Migration] = [items], poolSize: Int = 4, _ body: (PostgresDatabase, String) throws -> T
  ) throws -> T {
    let url = try TestPostgres.freshDatabase("storage")
    defer { TestPostgres.drop(url) }
    let database = try PostgresDatabase(
      url: url, migrations: migrations, poolSize: poolSize, logger: .discarding())
    defer { database.close() }
    return try body(database, url)
  }

  /// `make run DB=postgres` and the benchmarks connect through the local cluster's Unix socket
  /// (`postgres.sh url`'s default): a write over TCP is read back through the running server's
  /// socket, named as that script names it.
  @Test func aDatabaseIsReachedThroughTheServersUnixSocket() throws {
    try withDatabase { database, url in
      try database.write { try $0.execute("INSERT INTO items (id, name) VALUES (1, 'socket')") }
      let (folder, port) = try database.read { db in
        (
          try db.queryOne("SHOW unix_socket_directories")!.string(0).split(separator: ",")[0]
            .trimmingCharacters(in: .whitespaces),
          try db.queryOne("SHOW port")!.string(0)
        )
      }
      let name = String(url.split(separator: "/").last ?? "")
      let socketURL = "postgresql://grocer@/\(name)?host=\(folder)&port=\(port)"
      let overSocket = try PostgresDatabase(url: socketURL, migrations: [Self.items], logger: .discarding())
      defer { overSocket.close() }
      let connection = try PostgresConnection(url: socketURL)
      #expect(try connection.queryOne("SELECT inet_server_addr() IS NULL")?.bool(0) == true)
      #expect(
        try overSocket.read { try $0.queryOne("SELECT name FROM items WHERE id = 1")?.string(0) } == "socket")
    }
  }

  /// `executeTogether` is one statement here: every part's write happens, the last one's rows
  /// are what `changes` counts, and a failing part undoes them all.
  @Test func writesRunTogetherAreOneStatementAndAllHappen() throws {
    let tables = Migration(
      version: 1, name: "two tables",
      sql: "CREATE TABLE a (id INTEGER PRIMARY KEY, n INTEGER); CREATE TABLE b (id INTEGER PRIMARY KEY)")
    try withDatabase([tables]) { database, _ in
      let statements = try database.write { db -> Int in
        try db.execute("INSERT INTO a (id, n) VALUES (1, 0), (2, 0)")
        let connection = try #require(db as? PostgresConnection)
        let before = connection.prepareCount
        try db.executeTogether([
          ("INSERT INTO b (id) VALUES (?), (?)", [7, 8]),
          ("UPDATE a SET n = n + ? WHERE id IN (?, ?)", [5, 1, 2]),
        ])
        #expect(db.changes == 2)
        return connection.prepareCount - before
      }
      #expect(statements == 1)
      #expect(
        try database.read { try $0.query("SELECT id FROM b ORDER BY id").map { try $0.int(0) } } == [7, 8])
      #expect(
        try database.read { try $0.query("SELECT n FROM a ORDER BY id").map { try $0.int(0) } } == [5, 5])
      #expect(throws: StorageError.self) {
        try database.write { db in
          try db.executeTogether([
            ("INSERT INTO b (id) VALUES (?)", [9]),
            ("INSERT INTO a (id, n) VALUES (?, ?)", [1, 1]),
          ])
        }
      }
      #expect(
        try database.read { try $0.query("SELECT id FROM b ORDER BY id").map { try $0.int(0) } } == [7, 8])
    }
  }

  /// Connections do without GSSAPI encryption unless the URL asks for it: what a URL says
  /// overrides the defaults (this server offers none, so requiring it fails).
  @Test func aURLsOwnParametersOverrideTheConnectionDefaults() throws {
    try withDatabase { _, url in
      let plain = try PostgresConnection(url: url)
      #expect(try plain.queryOne("SELECT 1")?.int(0) == 1)
      #expect(throws: StorageError.self) { _ = try PostgresConnection(url: url + "?gssencmode=require") }
    }
  }

  @Test func migrationsAreAppliedOnceInOrderAndTheVersionIsRecorded() throws {
    let migrations = [
      Migration(version: 1, name: "create", sql: "CREATE TABLE log (n SERIAL PRIMARY KEY, step TEXT)"),
      Migration(version: 2, name: "first", sql: "INSERT INTO log (step) VALUES ('two')"),
      Migration(
        version: 5, name: "second", sql: "no such dialect",
        postgres: "INSERT INTO log (step) VALUES ('five'); INSERT INTO log (step) VALUES ('five.b')"),
    ]
    try withDatabase(migrations) { database, url in
      #expect(try database.schemaVersion() == 5)
      database.close()
      let extended =
        migrations + [Migration(version: 6, name: "third", sql: "INSERT INTO log (step) VALUES ('six')")]
      let reopened = try PostgresDatabase(url: url, migrations: extended, logger: .discarding())
      defer { reopened.close() }
      #expect(try reopened.schemaVersion() == 6)
      let steps = try reopened.read {
        try $0.query("SELECT step FROM log ORDER BY n").map { try $0.string(0) }
      }
      #expect(steps == ["two", "five", "five.b", "six"])
    }
  }

  @Test func aFailingMigrationRollsBackAndThrows() throws {
    let good = Migration(version: 1, name: "good", sql: "CREATE TABLE a (x INTEGER)")
    let bad = Migration(
      version: 2, name: "bad", sql: "CREATE TABLE b (x INTEGER); INSERT INTO missing VALUES (1)")
    let url = try TestPostgres.freshDatabase("storage")
    defer { TestPostgres.drop(url) }
    #expect {
      _ = try PostgresDatabase(url: url, migrations: [good, bad], logger: .discarding())
    } throws: { error in
      guard case .migration(let version, let name, _) = error as? StorageError else { return false }
      return version == 2 && name == "bad"
    }
    let database = try PostgresDatabase(url: url, migrations: [good], logger: .discarding())
    defer { database.close() }
    #expect(try database.schemaVersion() == 1)
    let tables = try database.read {
      try $0.query("SELECT tablename FROM pg_tables WHERE tablename IN ('a', 'b')").map { try $0.string(0) }
    }
    #expect(tables == ["a"])
  }

  /// Booleans bind as 0/1, as in SQLite: flags are INTEGER columns in both engines.
  @Test func valuesComeBackAsTheyWereBound() throws {
    let table = Migration(
      version: 1, name: "values",
      sql:
        "CREATE TABLE v (i BIGINT, r DOUBLE PRECISION, t TEXT, b BYTEA, n TEXT, flag INTEGER, d DOUBLE PRECISION)"
    )
    try withDatabase([table]) { database, _ in
      let bytes: [UInt8] = [0, 1, 0x7f, 0x80, 0xff]
      let row = try database.write { db in
        try db.execute(
          "INSERT INTO v SELECT ?, ?, ?, ?, ?, ?, ?", Int64.max, 1_790_000_000.125, "Brot / Bäckerei \"?\" 🥖",
          bytes, String?.none, true, 2)
        #expect(db.changes == 1)
        // The same text bound with a real number where an integer was is prepared again.
        try db.execute("UPDATE v SET d = ?", Double?.none)
        try db.execute("UPDATE v SET d = ?", 2)
        try db.execute("UPDATE v SET d = ?", 3.5)
        try db.execute("UPDATE v SET d = ?", Double?.none)
        try db.execute("UPDATE v SET d = ?", 3.5)
        return try #require(try db.queryOne("SELECT i, r, t, b, n, flag, d FROM v"))
      }
      #expect(try row.int64("i") == Int64.max)
      #expect(try row.double("r") == 1_790_000_000.125)
      #expect(try row.string("t") == "Brot / Bäckerei \"?\" 🥖")
      #expect(try row.value("b") == .blob(bytes))
      #expect(try row.isNull("n"))
      #expect(try row.bool("flag"))
      #expect(try row.double("d") == 3.5)
      // Bytes bound to a TEXT column are its UTF-8 text (encoded JSON), not bytea's hex form.
      try database.write { try $0.execute("UPDATE v SET t = ?", Data(#"{"a":"\\b"}"#.utf8)) }
      #expect(try database.read { try $0.queryOne("SELECT t FROM v")?.string(0) } == #"{"a":"\\b"}"#)
    }
  }

  @Test func aThrowingWriteRollsBackAndAConstraintIsNamed() throws {
    try withDatabase { database, _ in
      #expect(throws: TestError.self) {
        try database.write { db in
          try db.execute("INSERT INTO items (id, name) VALUES (?, ?)", 1, "one")
          throw TestError()
        }
      }
      #expect(try database.read { try $0.queryOne("SELECT count(*) FROM items")?.int(0) } == 0)
      try database.write { try $0.execute("INSERT INTO items (id, name) VALUES (?, ?)", 1, "one") }
      #expect {
        try database.write { try $0.execute("INSERT INTO items (id, name) VALUES (?, ?)", 2, "one") }
      } throws: { error in
        guard let error = error as? StorageError, case .constraint(let code, let message) = error else {
          return false
        }
        return error.isConstraintViolation && code == 23505 && message.contains("items_name_key")
      }
      #expect {
        try database.read { _ = try $0.query("SELEC nonsense") }
      } throws: { error in
        if case .engine(_, let message, let sql) = error as? StorageError {
          return message.hasPrefix("42601") && sql == "SELEC nonsense"
        }
        return false
      }
      #expect(throws: StorageError.self) {
        try database.write { try $0.execute("INSERT INTO items (id, name) VALUES (?, ?)", 3) }
      }
      // The pool's connections are usable after every one of those failures.
      #expect(
        try database.read { try $0.queryOne("SELECT name FROM items WHERE id = ?", 1)?.string(0) } == "one")
    }
  }

  @Test func afterCommitRunsOnceCommittedAndNeverForARollback() throws {
    try withDatabase { database, _ in
      let ran = Mutex<[String]>([])
      try database.write { db in
        try db.execute("INSERT INTO items (id, name) VALUES (?, ?)", 1, "one")
        database.afterCommit { ran.withLock { $0.append("committed") } }
        #expect(ran.withLock { $0 }.isEmpty)
      }
      _ = try? database.write { db in
        database.afterCommit { ran.withLock { $0.append("rolled back") } }
        throw TestError()
      }
      database.afterCommit { ran.withLock { $0.append("outside") } }
      #expect(ran.withLock { $0 } == ["committed", "outside"])
      #expect(throws: StorageError.self) {
        try database.write { _ in try database.write { _ in } }
      }
    }
  }

  /// Read, add one, write back from many threads at once: the snapshot's first-updater-wins and
  /// the retries of its conflicts lose no increment (READ COMMITTED would).
  @Test func concurrentReadModifyWritesLoseNothing() async throws {
    try await withCounters { database in
      try database.write { try $0.execute("INSERT INTO counters VALUES (1, 0)") }
      let commits = Atomic<Int>(0)
      database.onCommit { commits.add(1, ordering: .relaxed) }
      try await withThrowingTaskGroup(of: Void.self) { group in
        for _ in 0..<6 {
          group.addTask {
            for _ in 0..<25 {
              try await database.writeAsync { db in
                let value = try db.queryOne("SELECT value FROM counters WHERE id = 1")!.int(0)
                try db.execute("UPDATE counters SET value = ? WHERE id = 1", value + 1)
                db.wakeCommitObservers()
              }
            }
          }
        }
        try await group.waitForAll()
      }
      #expect(try database.read { try $0.queryOne("SELECT value FROM counters")?.int(0) } == 150)
      // One wake per commit that asked for it, and one when the listener for other replicas'
      // outbox rows started; a commit that did not ask wakes nobody.
      #expect(await eventually { commits.load(ordering: .relaxed) == 151 })
      try database.write { try $0.execute("UPDATE counters SET value = 0 WHERE id = 1") }
      try await Task.sleep(for: .milliseconds(300))
      #expect(commits.load(ordering: .relaxed) == 151)
    }
  }

  /// Locking writes of one row queue on its lock and each runs once (a snapshot write would fail
  /// and run again), and what one reads with `lockClause` is the newest committed version, even
  /// when it was committed after the write's first statement.
  @Test func aLockingWriteWaitsForARowAndSeesItsNewestVersion() async throws {
    try await withCounters { database in
      try database.write { db in
        #expect(db.lockClause == "")
        try db.execute("INSERT INTO counters VALUES (1, 0), (2, 0)")
      }
      let runs = Recorder<Int>()
      try await withThrowingTaskGroup(of: Void.self) { group in
        for _ in 0..<6 {
          group.addTask {
            for _ in 0..<25 {
              try await database.onWriterQueue {
                try database.writeLockingRows { db in
                  runs.append(1)
                  let value = try db.queryOne("SELECT value FROM counters WHERE id = 1\(db.lockClause)")!.int(
                    0)
                  try db.execute("UPDATE counters SET value = ? WHERE id = 1", value + 1)
                }
              }
            }
          }
        }
        try await group.waitForAll()
      }
      #expect(try database.read { try $0.queryOne("SELECT value FROM counters WHERE id = 1")?.int(0) } == 150)
      #expect(runs.count == 150, "every locking write ran once")

      // Another writer changes row 1 and commits after the locking write's first statement.
      let go = DispatchSemaphore(value: 0)
      let done = DispatchSemaphore(value: 0)
      Thread {
        go.wait()
        _ = try? database.write { try $0.execute("UPDATE counters SET value = 1000 WHERE id = 1") }
        done.signal()
      }.start()
      let attempts = Recorder<Int>()
      let seen = try database.writeLockingRows { db in
        attempts.append(1)
        #expect(db.lockClause == " FOR UPDATE")
        _ = try db.queryOne("SELECT value FROM counters WHERE id = 2")
        if attempts.count == 1 {
          go.signal()
          done.wait()
        }
        let value = try db.queryOne("SELECT value FROM counters WHERE id = 1\(db.lockClause)")!.int(0)
        try db.execute("UPDATE counters SET value = ? WHERE id = 1", value + 1)
        return value
      }
      #expect(seen == 1000)
      #expect(attempts.count == 1)
      #expect(
        try database.read { try $0.queryOne("SELECT value FROM counters WHERE id = 1")?.int(0) } == 1001)
    }
  }

  /// BEGIN goes out with a transaction's first statement and a read's COMMIT is not waited
  /// for: a read still sees one snapshot across its statements, and the connection it used
  /// serves the next calls (which read that COMMIT's answer first).
  @Test func aReadSeesOneSnapshotAndItsConnectionServesTheNextCalls() throws {
    try withDatabase(poolSize: 2) { database, _ in
      try database.write { try $0.execute("INSERT INTO items (id, name) VALUES (1, 'before')") }
      let seen = try database.read { db in
        let first = try db.queryOne("SELECT name FROM items WHERE id = 1")?.string(0)
        try database.write { try $0.execute("UPDATE items SET name = 'after' WHERE id = 1") }
        let second = try db.queryOne("SELECT name FROM items WHERE id = 1")?.string(0)
        return [first, second]
      }
      #expect(seen == ["before", "before"])
      #expect(try database.read { _ in 42 } == 42, "a read without statements")
      for _ in 0..<5 {
        #expect(
          try database.read { try $0.queryOne("SELECT name FROM items WHERE id = 1")?.string(0) } == "after")
        try database.write { try $0.execute("UPDATE items SET name = 'after' WHERE id = 1") }
      }
      #expect(throws: StorageError.self) {
        try database.read { try $0.execute("UPDATE items SET name = 'x' WHERE id = 1") }
      }
      // A value that cannot be bound, in the statement that carries BEGIN, fails that call only.
      #expect(throws: StorageError.self) {
        try database.write { try $0.execute("INSERT INTO items (id, name) VALUES (2, ?)", Double.infinity) }
      }
      #expect(
        try database.read { try $0.queryOne("SELECT name FROM items WHERE id = 1")?.string(0) } == "after")
    }
  }

  @Test func theOutboxAndInboxWorkOnPostgres() throws {
    try withDatabase([]) { database, _ in
      let messages = (1...3).map {
        OutgoingMessage(
          messageID: "m\($0)", routingKey: "stock.changed", type: "stock.changed",
          body: Data("{\"n\":\($0)}".utf8),
          timestamp: Date(timeIntervalSince1970: 1_790_000_000 + Double($0)), correlationID: nil)
      }
      try database.write { db in for message in messages { try Outbox.append(message, in: db) } }
      let pending = try database.read { try Outbox.pending(limit: 10, in: $0) }
      #expect(pending.map(\.message.messageID) == ["m1", "m2", "m3"])
      #expect(pending.map(\.message.body) == messages.map(\.body))
      let removed = try database.write {
        try Outbox.remove([pending[0].seq, pending[1].seq], in: $0)
      }
      #expect(removed == 2)
      #expect(try database.read { try Outbox.backlog(in: $0) } == 1)
      let now = Date(timeIntervalSince1970: 1_790_000_000)
      #expect(try database.write { try Inbox.claim(messageID: "m1", consumer: "c", at: now, in: $0) })
      #expect(try !database.write { try Inbox.claim(messageID: "m1", consumer: "c", at: now, in: $0) })
      #expect(try database.read { try Inbox.contains(messageID: "m1", consumer: "c", in: $0) })
    }
  }

  @Test func anOutboxMadeWithAUniqueMessageIdLosesTheConstraintAndKeepsItsRows() throws {
    try withDatabase([]) { database, url in
      try database.write { db in
        try db.execute("ALTER TABLE outbox ADD CONSTRAINT outbox_message_id_key UNIQUE (message_id)")
        try Outbox.append(message("m1"), in: db)
      }
      database.close()
      let reopened = try PostgresDatabase(url: url, migrations: [], logger: .discarding())
      defer { reopened.close() }
      let constraints = try reopened.read {
        try $0.queryOne(
          "SELECT count(*) FROM pg_constraint WHERE conrelid = 'outbox'::regclass AND contype = 'u'")?
          .int(0)
      }
      #expect(constraints == 0)
      try reopened.write { try Outbox.append(message("m1"), in: $0) }
      let pending = try reopened.read { try Outbox.pending(limit: 10, in: $0) }
      #expect(pending.map(\.message.messageID) == ["m1", "m1"])
    }
  }

  private func message(_ id: String) -> OutgoingMessage {
    OutgoingMessage(
      messageID: id, routingKey: "stock.changed", type: "stock.changed", body: Data("{}".utf8),
      timestamp: Date(timeIntervalSince1970: 1_790_000_000), correlationID: nil)
  }

  /// Two replicas on one database: the one whose relay waits is woken by the outbox rows the
  /// other commits (LISTEN/NOTIFY), not by its own idle poll; other writes do not wake it.
  @Test func outboxRowsOfAnotherReplicaWakeTheCommitObservers() async throws {
    try await Self.withTwoReplicas { replicaA, replicaB in
      let woken = Atomic<Int>(0)
      replicaB.onCommit { woken.add(1, ordering: .relaxed) }
      // The listener wakes once when it starts listening (for what came before).
      #expect(await eventually { woken.load(ordering: .relaxed) == 1 })
      try replicaA.write { try $0.execute("INSERT INTO items (id, name) VALUES (?, ?)", 1, "one") }
      try await Task.sleep(for: .milliseconds(400))
      #expect(woken.load(ordering: .relaxed) == 1, "a write without outbox rows")
      try Self.append("m1", at: replicaA)
      #expect(await eventually(timeout: .seconds(3)) { woken.load(ordering: .relaxed) == 2 })
    }
  }

  /// While a process's own relay holds the outbox lease, its outbox rows wake that relay and
  /// are not announced to the other replicas (nothing there would publish them); once it does
  /// not, they are again.
  @Test func outboxRowsOfTheReplicaWhoseRelayHoldsTheLeaseWakeOnlyItself() async throws {
    try await Self.withTwoReplicas { replicaA, replicaB in
      let wokenA = Atomic<Int>(0)
      let wokenB = Atomic<Int>(0)
      replicaA.onCommit { wokenA.add(1, ordering: .relaxed) }
      replicaB.onCommit { wokenB.add(1, ordering: .relaxed) }
      #expect(
        await eventually { wokenA.load(ordering: .relaxed) == 1 && wokenB.load(ordering: .relaxed) == 1 })
      replicaA.outboxRelayedHere(true)
      try Self.append("m1", at: replicaA)
      #expect(wokenA.load(ordering: .relaxed) == 2, "its own relay, in-process")
      try await Task.sleep(for: .milliseconds(400))
      #expect(wokenB.load(ordering: .relaxed) == 1, "not announced while A relays")
      replicaA.outboxRelayedHere(false)
      try Self.append("m2", at: replicaA)
      #expect(await eventually(timeout: .seconds(3)) { wokenB.load(ordering: .relaxed) == 2 })
      #expect(try replicaB.read { try $0.queryOne("SELECT count(*) FROM outbox")?.int(0) } == 2)
    }
  }

  /// The relay says when it holds the lease: from then on its replica's outbox rows are not
  /// announced to the others, and after it stops (giving the lease up) they are again.
  @Test func aRelayHoldingTheLeaseKeepsItsReplicasOutboxRowsToItself() async throws {
    try await Self.withTwoReplicas { replicaA, replicaB in
      let wokenB = Atomic<Int>(0)
      replicaB.onCommit { wokenB.add(1, ordering: .relaxed) }
      #expect(await eventually { wokenB.load(ordering: .relaxed) == 1 })
      let publisher = CountingPublisher()
      let relay = OutboxRelay(
        database: replicaA, publisher: publisher, logger: .discarding(), metrics: MetricsRegistry())
      try await relay.start()
      // Published means the relay held the lease; what B heard of it until then does not count.
      try Self.append("m1", at: replicaA)
      #expect(await eventually { publisher.count.load(ordering: .relaxed) == 1 })
      let heard = wokenB.load(ordering: .relaxed)
      try Self.append("m2", at: replicaA)
      #expect(await eventually { publisher.count.load(ordering: .relaxed) == 2 })
      try await Task.sleep(for: .milliseconds(400))
      #expect(wokenB.load(ordering: .relaxed) == heard)
      await relay.shutdown()
      try Self.append("m3", at: replicaA)
      #expect(await eventually(timeout: .seconds(3)) { wokenB.load(ordering: .relaxed) == heard + 1 })
    }
  }

  /// Two replicas' databases on one fresh database, closed and the database dropped after `body`.
  static func withTwoReplicas(
    _ body: (PostgresDatabase, PostgresDatabase) async throws -> Void
  ) async throws {
    let url = try TestPostgres.freshDatabase("storage")
    defer { TestPostgres.drop(url) }
    let replicaA = try PostgresDatabase(url: url, migrations: [items], logger: .discarding())
    let replicaB = try PostgresDatabase(url: url, migrations: [items], logger: .discarding())
    defer {
      replicaA.close()
      replicaB.close()
    }
    try await body(replicaA, replicaB)
  }

  static func append(_ id: String, at database: PostgresDatabase) throws {
    try database.write { db in
      try Outbox.append(
        OutgoingMessage(
          messageID: id, routingKey: "k", type: "t", body: Data("{}".utf8), timestamp: Date(),
          correlationID: nil),
        in: db)
    }
  }

  /// Counts the messages it is asked to publish, and confirms them.
  final class CountingPublisher: ConfirmedPublisher {
    let count = Atomic<Int>(0)
    func publish(_ messages: [OutgoingMessage]) async throws { count.add(messages.count, ordering: .relaxed) }
  }

  /// The server ends every connection of ours (a restart, a failover): the call in flight fails
  /// with an error that says the database is unavailable (a consumer waits on it rather than
  /// returning the message) and the pool reconnects for the next one.
  @Test func aDatabaseThatWentAwayFailsTheCallAndTheNextOneReconnects() throws {
    try withDatabase(poolSize: 2) { database, url in
      try database.write { try $0.execute("INSERT INTO items (id, name) VALUES (?, ?)", 1, "one") }
      let name = String(URL(string: url)!.path.dropFirst())
      try TestPostgres.psql(
        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = '\(name)' AND pid <> pg_backend_pid()"
      )
      #expect {
        try database.read { try $0.queryOne("SELECT name FROM items WHERE id = ?", 1) }
      } throws: { error in
        guard case .unavailable = error as? StorageError else { return false }
        return error.isTemporaryOutage
      }
      #expect(
        try database.read { try $0.queryOne("SELECT name FROM items WHERE id = ?", 1)?.string(0) } == "one")
    }
  }

  /// A server that does not answer (down at start) does not stop the database from being
  /// made: each call fails with an open error that keeps the password out.
  @Test func aServerThatDoesNotAnswerFailsEachCallWithAnOpenError() throws {
    let database = try PostgresDatabase(
      url: "postgresql://grocer:secret@127.0.0.1:1/nothing?connect_timeout=2", migrations: [Self.items],
      logger: .discarding())
    defer { database.close() }
    #expect(!database.isReachable())
    #expect {
      try database.write { try $0.execute("INSERT INTO items (id, name) VALUES (?, ?)", 1, "one") }
    } throws: { error in
      guard case .open(let path, _) = error as? StorageError else { return false }
      return !path.contains("secret")
    }
  }

  /// The database appears after the service started (PostgreSQL coming up): the first call
  /// that reaches it migrates, and from then on it works.
  @Test func aDatabaseThatComesLaterIsMigratedOnFirstUse() throws {
    let url = try TestPostgres.freshDatabase("storage")
    TestPostgres.drop(url)
    defer { TestPostgres.drop(url) }
    let database = try PostgresDatabase(url: url, migrations: [Self.items], logger: .discarding())
    defer { database.close() }
    #expect(!database.isReachable())
    let name = String(URL(string: url)!.path.dropFirst())
    try TestPostgres.psql("CREATE DATABASE \(name)")
    #expect(database.isReachable())
    try database.write { try $0.execute("INSERT INTO items (id, name) VALUES (?, ?)", 1, "one") }
    #expect(try database.schemaVersion() == 1)
  }

}

struct TestError: Error {}
