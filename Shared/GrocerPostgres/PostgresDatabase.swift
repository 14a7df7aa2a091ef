import Dispatch
import Foundation
import GrocerCore
import GrocerRuntime
import GrocerStorage
import Synchronization

/// One service's PostgreSQL database: a pool of connections shared by every replica's writes
/// and reads (what lets a service run as several processes on several machines).
///
/// Writes run concurrently, each in a `REPEATABLE READ` transaction (a snapshot): of two writes
/// that change one row the second fails (SQLSTATE 40001), and of two that insert one key the
/// second finds it taken (23505) once the first committed; either, and a deadlock (40P01),
/// rolls the attempt back and runs the closure again, which then sees the other's write. So a
/// read-modify-write loses nothing, as under SQLite's single writer, as long as it writes the
/// rows its decision read (every store does: the row it checks is the row it changes).
/// `SERIALIZABLE` would also catch decisions on rows a write does not change, but it failed most
/// concurrent inserts of neighbouring keys (its locks cover index pages): tens of thousands of
/// retries in one order benchmark. A write's closure must do nothing but database work and
/// `afterCommit` registrations, which is what `SQLDatabase` already asks. Rows that most
/// writes share (stock counts) go through `writeLockingRows` instead: `READ COMMITTED` with the
/// rows locked as they are read, so their writers queue instead of failing. Reads run in
/// `REPEATABLE READ READ ONLY` transactions: one snapshot per closure.
///
/// Opened with `GROCER_DATABASE_URL`'s form, `postgresql://user@host:port/database`; libpq reads
/// the URL, so its parameters (`sslmode`, `connect_timeout`, …) work as documented there.
public final class PostgresDatabase: SQLDatabase {
  /// How many times a write that lost a conflict is run before its error is thrown.
  public static let maximumAttempts = 20
  /// How many times a write that found its key taken is run again: once is enough when a
  /// concurrent insert was the cause (the retry's snapshot sees it); a key the write itself
  /// repeats fails the same way every time.
  static let maximumTakenKeyAttempts = 3

  public let url: String
  public var mayHaveOtherWriters: Bool { true }
  private let logger: Logger
  private let idle: Mutex<[ConnectionSlot]>
  private let permits: DispatchSemaphore
  private let poolSize: Int
  private let closed = Atomic<Bool>(false)
  private let commitObservers = Mutex<[@Sendable () -> Void]>([])
  /// Whether this process's outbox relay holds the lease (`outboxRelayedHere`); until it does,
  /// outbox writes are announced to the other processes.
  private let relayedHere = Atomic<Bool>(false)
  private let queue: DispatchQueue
  private let transactions = RunningTransactions()
  /// The server processes of this pool's connections: their outbox notifications are skipped,
  /// since this process wakes its observers itself when it commits.
  private let ownBackends = Mutex<Set<Int32>>([])

  private let migrations: [Migration]
  /// Whether the migrations ran (once per process, on the first connection that opened); the
  /// atomic copy keeps the lock off every call once they have.
  private let migrated = Mutex(false)
  private let ready = Atomic<Bool>(false)

  /// Connects and migrates at once when the server answers. When it does not (down at start,
  /// still coming up), the database is made anyway and every call throws `StorageError.open`
  /// until it answers; the first call that reaches it migrates. So a service starts, says 503
  /// on `/health/ready` naming its database, and recovers by itself. A migration that fails
  /// throws here, as with SQLite. Connections are opened as calls need them, up to `poolSize`.
  public init(url: String, migrations: [Migration], poolSize: Int = 8, logger: Logger) throws {
    self.url = url
    self.logger = logger.with(["db.url": PostgresConnection.redacted(url)])
    self.poolSize = max(1, poolSize)
    self.permits = DispatchSemaphore(value: self.poolSize)
    self.queue = DispatchQueue(label: "grocer.postgres", attributes: .concurrent)
    try Migration.validate(migrations)
    self.migrations = migrations
    self.idle = Mutex([])
    do {
      try migrateIfNeeded()
    } catch StorageError.open(_, let message) {
      self.logger.warning("PostgreSQL does not answer; calls fail until it does", ["error": message])
    }
  }

  /// Runs the migrations on a connection of their own unless they ran; throws `.open` while
  /// the server does not answer.
  private func migrateIfNeeded() throws {
    guard !ready.load(ordering: .acquiring) else { return }
    try migrated.withLock { done in
      guard !done else { return }
      let connection = try PostgresConnection(url: url)
      defer { connection.close() }
      try Self.migrate(connection, migrations, logger: logger)
      done = true
      ready.store(true, ordering: .releasing)
    }
  }

  deinit { close() }

  // MARK: - Transactions

  public func write<T>(_ body: (any SQLConnection) throws -> T) throws -> T {
    try write(locksRows: false, body)
  }

  /// A `READ COMMITTED` write whose `lockClause` is ` FOR UPDATE`: a row another write changed
  /// is waited for and read as that write left it, so neither fails with 40001 (a snapshot
  /// write cannot do that: its snapshot predates the wait). Deadlocks are still retried.
  public func writeLockingRows<T>(_ body: (any SQLConnection) throws -> T) throws -> T {
    try write(locksRows: true, body)
  }

  private func write<T>(locksRows: Bool, _ body: (any SQLConnection) throws -> T) throws -> T {
    if let open = transactions.current {
      guard let batch = open.batch, !open.writing else {
        throw StorageError.misuse("write called inside a write; a transaction is already open")
      }
      // A write of a `writeEach` batch runs in the batch's snapshot, a `writeLockingRows` too
      // (its reads lock nothing there): a row it changes that another write changed since the
      // snapshot fails the batch (40001), and the jobs then run alone.
      open.writing = true
      defer { open.writing = false }
      return try body(batch)
    }
    var attempt = 1
    while true {
      let context = TransactionContext()
      do {
        let (result, wakes) = try withConnection { connection in
          let result = try transactions.run(context) {
            try Self.inTransaction(
              connection,
              locksRows ? "BEGIN ISOLATION LEVEL READ COMMITTED" : "BEGIN ISOLATION LEVEL REPEATABLE READ",
              awaitingCommit: true, announcing: announcesOutboxWrites, locksRows: locksRows, body)
          }
          return (result, connection.takeCommitWake())
        }
        if wakes { wakeObservers() }
        for action in context.actions { action() }
        return result
      } catch let error as StorageError {
        switch error {
        case .busy where attempt < Self.maximumAttempts: break
        case .constraint(let code, _) where code == 23505 && attempt < Self.maximumTakenKeyAttempts: break
        default: throw error
        }
        attempt += 1
        // A random pause that doubles with each attempt (at most 50 ms), so the transactions
        // that collided do not collide again.
        usleep(UInt32.random(in: 100...min(50_000, 500 << UInt32(attempt))))
      }
    }
  }

  public func read<T>(_ body: (any SQLConnection) throws -> T) throws -> T {
    try withConnection { connection in
      try Self.inTransaction(
        connection, "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY", awaitingCommit: false, body)
    }
  }

  public func afterCommit(_ action: @escaping @Sendable () -> Void) {
    guard let context = transactions.current else { return action() }
    context.actions.append(action)
  }

  public func readAsync<T: Sendable>(
    _ body: @escaping @Sendable (any SQLConnection) throws -> T
  ) async throws -> T {
    try await withCheckedThrowingContinuation { continuation in
      queue.async { continuation.resume(with: Result { try self.read(body) }) }
    }
  }

  /// Runs `body` off the cooperative pool. Unlike SQLite there is no one writer to queue
  /// behind: each `write` inside is a transaction of its own, and concurrent ones share the WAL
  /// flushes of their commits on the server.
  public func onWriterQueue<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { continuation in
      queue.async { continuation.resume(with: Result { try body() }) }
    }
  }

  /// The jobs in one `REPEATABLE READ` transaction, each `write` inside joining it, so a
  /// consumer's batch of events costs one commit instead of one per event. When any job throws
  /// (its own error or a conflict) or the commit fails, the transaction is rolled back and the
  /// jobs run again one by one, each `write` its own transaction with its own retries: that
  /// gives each job its own outcome, as SQLite's savepoints do.
  public func writeEach(_ jobs: [@Sendable () throws -> Void]) async throws -> [(any Error)?] {
    try await onWriterQueue {
      if jobs.count > 1, self.writeTogether(jobs) { return Array(repeating: nil, count: jobs.count) }
      return jobs.map(runCapturingError)
    }
  }

  /// Whether `jobs` ran and committed in one transaction; false when it was rolled back.
  private func writeTogether(_ jobs: [@Sendable () throws -> Void]) -> Bool {
    let context = TransactionContext()
    do {
      let wakes = try withConnection { connection in
        try transactions.run(context) {
          context.batch = connection
          try Self.inTransaction(
            connection, "BEGIN ISOLATION LEVEL REPEATABLE READ", awaitingCommit: true,
            announcing: announcesOutboxWrites
          ) { _ in
            for job in jobs { try job() }
          }
        }
        return connection.takeCommitWake()
      }
      if wakes { wakeObservers() }
      for action in context.actions { action() }
      return true
    } catch {
      return false
    }
  }

  public func submitWrite<T: Sendable>(
    _ body: @escaping @Sendable () throws -> T, completion: @escaping @Sendable (Result<T, any Error>) -> Void
  ) {
    queue.async { completion(Result { try body() }) }
  }

  /// Calls `observer` after every write this process commits that asked for it, and whenever
  /// another process (a replica) commits rows into the outbox: a trigger notifies channel
  /// `grocer_outbox`, and a connection of its own listens for it from the first observer on. So
  /// a relay holding the lease wakes for the events every replica writes, not at its next idle
  /// poll.
  public func onCommit(_ observer: @escaping @Sendable () -> Void) {
    let first = commitObservers.withLock { observers in
      observers.append(observer)
      return observers.count == 1
    }
    if first { startListening() }
  }

  private func startListening() {
    let thread = Thread { [weak self] in self?.listen() }
    thread.name = "grocer.postgres.listen"
    thread.start()
  }

  /// The listening loop: wakes the observers on each notification; after a lost connection it
  /// reconnects (a second later) and wakes them once, for whatever was missed meanwhile.
  private func listen() {
    var connection: PostgresConnection?
    while !closed.load(ordering: .acquiring) {
      do {
        if connection == nil {
          let fresh = try PostgresConnection(url: url)
          try fresh.executeScript("LISTEN grocer_outbox")
          connection = fresh
          wakeObservers()
        }
        let fromOthers = try connection!.awaitNotifications(timeoutMilliseconds: 250) { sender in
          !ownBackends.withLock { $0.contains(sender) }
        }
        if fromOthers > 0 { wakeObservers() }
      } catch {
        connection?.close()
        connection = nil
        logger.warning("outbox notifications lost; listening again", ["error": "\(error)"])
        Thread.sleep(forTimeInterval: 1)
      }
    }
    connection?.close()
  }

  public func outboxRelayedHere(_ relayed: Bool) { relayedHere.store(relayed, ordering: .relaxed) }

  /// Whether a write's outbox rows are to be announced to other processes: the relay that will
  /// publish them is not this process's.
  private var announcesOutboxWrites: Bool { !relayedHere.load(ordering: .relaxed) }

  private func wakeObservers() {
    for observer in commitObservers.withLock({ $0 }) { observer() }
  }

  public func schemaVersion() throws -> Int {
    try read { try $0.queryOne("SELECT coalesce(max(version), 0) FROM grocer_schema")?.int(0) ?? 0 }
  }

  public func close() {
    guard !closed.exchange(true, ordering: .acquiringAndReleasing) else { return }
    for _ in 0..<poolSize { permits.wait() }
    for slot in idle.withLock({ $0 }) { slot.connection.close() }
    idle.withLock { $0 = [] }
    for _ in 0..<poolSize { permits.signal() }
  }

  // MARK: - Internals

  /// Lends a connection of the pool (opening one when none is idle) for `body`; a connection
  /// that broke is dropped instead of returned, so the next caller gets a fresh one.
  private func withConnection<T>(_ body: (PostgresConnection) throws -> T) throws -> T {
    permits.wait()
    defer { permits.signal() }
    guard !closed.load(ordering: .acquiring) else { throw StorageError.closed }
    try migrateIfNeeded()
    let slot = try idle.withLock { $0.popLast() } ?? opened()
    defer {
      if !slot.connection.isBroken && !slot.connection.inTransaction {
        idle.withLock { $0.append(slot) }
      } else {
        _ = ownBackends.withLock { $0.remove(slot.connection.backendPID) }
        slot.connection.close()
      }
    }
    return try body(slot.connection)
  }

  private func opened() throws -> ConnectionSlot {
    let connection = try PostgresConnection(url: url)
    _ = ownBackends.withLock { $0.insert(connection.backendPID) }
    return ConnectionSlot(connection)
  }

  /// Runs `body` in a transaction that `begin` opens (sent with its first statement); a read
  /// does not wait for its COMMIT's answer.
  private static func inTransaction<T>(
    _ connection: PostgresConnection, _ begin: String, awaitingCommit: Bool, announcing: Bool = false,
    locksRows: Bool = false, _ body: (any SQLConnection) throws -> T
  ) throws -> T {
    connection.begin(begin, locksRows: locksRows)
    do {
      let result = try body(connection)
      try connection.commit(awaitingAnswer: awaitingCommit, announcingOutboxWrites: announcing)
      return result
    } catch {
      connection.rollback()
      throw error
    }
  }

  /// Applies the migrations newer than the recorded version, each in its own transaction, under
  /// an advisory lock so that replicas starting together migrate once.
  private static func migrate(_ connection: PostgresConnection, _ migrations: [Migration], logger: Logger)
    throws
  {
    try connection.executeScript("SELECT pg_advisory_lock(7305)")
    defer { try? connection.executeScript("SELECT pg_advisory_unlock(7305)") }
    try connection.executeScript(FrameworkSchema.sql)
    let current = try connection.queryOne("SELECT coalesce(max(version), 0) FROM grocer_schema")?.int(0) ?? 0
    if let latest = migrations.last?.version, current > latest {
      throw StorageError.invalidMigrations(
        "database is at version \(current), newer than the latest known migration \(latest)")
    }
    for migration in migrations where migration.version > current {
      do {
        try inTransaction(connection, "BEGIN", awaitingCommit: true) { db in
          try db.executeScript(migration.postgres ?? migration.sql)
          try db.execute(
            "INSERT INTO grocer_schema (version, name) VALUES (?, ?)", migration.version, migration.name)
        }
      } catch let error as StorageError {
        logger.error(
          "migration failed",
          [
            "migration.version": "\(migration.version)", "migration.name": migration.name,
            "error": "\(error)",
          ])
        throw StorageError.migration(version: migration.version, name: migration.name, underlying: error)
      }
      logger.info(
        "migration applied", ["migration.version": "\(migration.version)", "migration.name": migration.name])
    }
  }
}

/// The tables every service gets, in PostgreSQL's dialect (SQLite's are in GrocerSQLite): the
/// outbox, its relay lease, the inbox, and the record of applied migrations.
enum FrameworkSchema {
  static let sql = """
    CREATE TABLE IF NOT EXISTS grocer_schema (
      version INTEGER PRIMARY KEY,
      name TEXT NOT NULL,
      applied_at DOUBLE PRECISION NOT NULL DEFAULT extract(epoch FROM clock_timestamp())
    );
    CREATE TABLE IF NOT EXISTS outbox (
      seq BIGSERIAL PRIMARY KEY,
      message_id TEXT NOT NULL,
      exchange TEXT NOT NULL,
      routing_key TEXT NOT NULL,
      type TEXT NOT NULL,
      correlation_id TEXT,
      timestamp DOUBLE PRECISION NOT NULL,
      body BYTEA NOT NULL,
      created_at DOUBLE PRECISION NOT NULL DEFAULT extract(epoch FROM clock_timestamp())
    );
    -- An outbox made before `message_id` lost its index (ids come from the services'
    -- generators; the index cost every event an insert and a delete) drops it.
    DO $$ BEGIN
      IF EXISTS (SELECT 1 FROM pg_constraint
                 WHERE conname = 'outbox_message_id_key' AND conrelid = 'outbox'::regclass) THEN
        ALTER TABLE outbox DROP CONSTRAINT outbox_message_id_key;
      END IF;
    END $$;
    CREATE TABLE IF NOT EXISTS inbox (
      consumer TEXT NOT NULL,
      message_id TEXT NOT NULL,
      processed_at DOUBLE PRECISION NOT NULL,
      PRIMARY KEY (consumer, message_id)
    );
    CREATE INDEX IF NOT EXISTS inbox_processed_at ON inbox (processed_at);
    -- Outbox rows were announced by a trigger on every insert; the writing transaction now
    -- announces them only when another process relays (PostgresDatabase.outboxRelayedHere).
    DROP TRIGGER IF EXISTS outbox_notify ON outbox;
    DROP FUNCTION IF EXISTS grocer_outbox_notify();
    CREATE TABLE IF NOT EXISTS outbox_lease (
      id INTEGER PRIMARY KEY CHECK (id = 1),
      owner TEXT NOT NULL,
      expires_at DOUBLE PRECISION NOT NULL
    );
    """
}

/// A connection owned by the pool and only lent out under one of its permits.
private final class ConnectionSlot: @unchecked Sendable {
  let connection: PostgresConnection
  init(_ connection: PostgresConnection) { self.connection = connection }
}

/// What a running write transaction collects: the actions to run once it commits. A
/// `writeEach` batch's also names its connection, which the batch's writes join.
private final class TransactionContext: @unchecked Sendable {
  var actions: [@Sendable () -> Void] = []
  var batch: PostgresConnection?
  /// Whether a write of the batch is running (a write inside it is refused).
  var writing = false
}

/// The write transaction each thread is running, so `afterCommit` (called from deep inside a
/// write's closure, on the same thread) finds its transaction, and a write inside a write is
/// refused as SQLite refuses it.
private final class RunningTransactions: Sendable {
  private let byThread = Mutex<[UInt: TransactionContext]>([:])

  private static var thread: UInt { UInt(pthread_self()) }

  var current: TransactionContext? { byThread.withLock { $0[Self.thread] } }

  func run<T>(_ context: TransactionContext, _ body: () throws -> T) rethrows -> T {
    let thread = Self.thread
    byThread.withLock { $0[thread] = context }
    defer { _ = byThread.withLock { $0.removeValue(forKey: thread) } }
    return try body()
  }
}
