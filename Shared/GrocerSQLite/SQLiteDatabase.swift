import CSQLite
import Dispatch
import Foundation
import GrocerCore
import GrocerRuntime
import GrocerStorage
import Synchronization

/// One service's SQLite database: a single writer connection and a small pool of readers.
///
/// Opened in WAL mode so readers see a consistent snapshot while the writer works. Writes are
/// serialized behind a lock, each in a `BEGIN IMMEDIATE` transaction that rolls back if the
/// closure throws. The framework tables (`outbox`, `inbox`) are created on open, then the
/// service's migrations are applied.
///
/// `write` and `read` block the calling thread; from async code prefer `writeAsync` and
/// `readAsync`, which run the closure on a Dispatch queue so the cooperative pool is not held.
/// Do not call `write` from inside a `write` closure (it throws: a transaction is already open).
public final class SQLiteDatabase: SQLDatabase {
  /// How hard a commit tries to reach the disk.
  public enum Durability: Sendable {
    /// `synchronous=NORMAL`: survives a process crash, may lose the last commits on power loss.
    case normal
    /// `synchronous=FULL`: every commit is on disk when `write` returns (money, idempotency).
    case full
  }

  /// The busy timeout of every connection, for another process (a backup, the CLI) holding a lock.
  static let busyTimeoutMilliseconds: Int32 = 5_000

  public let path: String
  public var mayHaveOtherWriters: Bool { false }
  private let durability: Durability
  private let logger: Logger
  private let writer: ConnectionSlot
  private let writerLock = NSRecursiveLock()
  private let readers: Mutex<[ConnectionSlot]>
  private let readerPermits: DispatchSemaphore
  private let readerCount: Int
  private let closed = Atomic<Bool>(false)
  private let commitObservers = Mutex<[@Sendable () -> Void]>([])
  private let writeQueue: DispatchQueue
  private let readQueue: DispatchQueue
  /// Writes waiting for the writer queue's next batch (`onWriterQueue`).
  private let pendingWrites = Mutex<(jobs: [PendingWrite], scheduled: Bool)>(([], false))
  /// State only touched with `writerLock` held: whether a batch transaction is open, and the
  /// actions to run once the running transaction commits.
  private let writerState = WriterState()
  /// Checkpoints the log off the committing threads; nil in memory.
  private let checkpointer: WALCheckpointer?
  /// Most writes committed together by one batch.
  static let maximumBatch = 128

  /// Opens (creating the file and its folder) and migrates the database at `path`.
  ///
  /// `":memory:"` works for quick tests but then reads share the writer connection; a temporary
  /// file is closer to production.
  /// `checkpointPages`: the log's size, in pages, that starts a checkpoint (`WALCheckpointer`).
  public init(
    path: String, migrations: [Migration], durability: Durability = .normal, readers: Int = 2,
    checkpointPages: Int = 1000, logger: Logger
  ) throws {
    self.path = path
    self.durability = durability
    self.logger = logger.with(["db.path": path])
    let inMemory = path == ":memory:" || path.isEmpty
    if !inMemory {
      let folder = URL(fileURLWithPath: path).deletingLastPathComponent().path
      do {
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
      } catch {
        throw StorageError.open(path: path, message: "cannot create folder \(folder): \(error)")
      }
    }
    try Migration.validate(migrations)

    let writer = try SQLiteConnection(path: path, flags: SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE)
    sqlite3_busy_timeout(try writer.rawHandle(), Self.busyTimeoutMilliseconds)
    if !inMemory {
      let mode = try writer.queryOne("PRAGMA journal_mode=WAL").map { try $0.string(0) }
      guard mode?.lowercased() == "wal" else {
        throw StorageError.open(path: path, message: "journal_mode is \(mode ?? "unknown"), not wal")
      }
    }
    try writer.execute(durability == .full ? "PRAGMA synchronous=FULL" : "PRAGMA synchronous=NORMAL")
    try writer.execute("PRAGMA foreign_keys=ON")
    // Debian builds SQLite with SECURE_DELETE, which zeroes deleted content even where that
    // costs writes (every outbox batch relayed, every row pruned). FAST zeroes it only where it
    // costs no extra I/O.
    _ = try writer.queryOne("PRAGMA secure_delete=FAST")
    try writer.executeScript(FrameworkSchema.sql)
    try FrameworkSchema.upgrade(writer)
    try Self.migrate(writer, migrations, logger: self.logger)
    if inMemory {
      checkpointer = nil
    } else {
      let checkpointer = try WALCheckpointer(
        path: path, synchronous: durability == .full ? "FULL" : "NORMAL", threshold: Int32(checkpointPages),
        logger: self.logger)
      try checkpointer.attach(to: writer)
      self.checkpointer = checkpointer
    }
    self.writer = ConnectionSlot(writer)

    var pool: [ConnectionSlot] = []
    if !inMemory {
      for _ in 0..<max(1, readers) {
        let reader = try SQLiteConnection(path: path, flags: SQLITE_OPEN_READONLY)
        sqlite3_busy_timeout(try reader.rawHandle(), Self.busyTimeoutMilliseconds)
        pool.append(ConnectionSlot(reader))
      }
    }
    self.readerCount = pool.count
    self.readers = Mutex(pool)
    self.readerPermits = DispatchSemaphore(value: pool.count)
    self.writeQueue = DispatchQueue(label: "grocer.storage.writer")
    self.readQueue = DispatchQueue(label: "grocer.storage.readers", attributes: .concurrent)
  }

  deinit { close() }

  // MARK: - Transactions

  /// Runs `body` in a write transaction (`BEGIN IMMEDIATE` … `COMMIT`), serialized with every
  /// other write. Any error thrown rolls the whole transaction back and is rethrown. After a
  /// successful commit the commit observers are called.
  ///
  /// Inside a batch (`onWriterQueue`) the transaction is a savepoint of the batch's: an error
  /// rolls back this write alone, and the commit (with its observers and `afterCommit` actions)
  /// is the batch's.
  public func write<T>(_ body: (any SQLConnection) throws -> T) throws -> T {
    writerLock.lock()
    if writerState.batchOpen {
      defer { writerLock.unlock() }
      return try inSavepoint(body)
    }
    let result: T
    let actions: [@Sendable () -> Void]
    let wakes: Bool
    do {
      defer { writerLock.unlock() }
      guard !closed.load(ordering: .acquiring) else { throw StorageError.closed }
      let connection = writer.connection
      try connection.execute("BEGIN IMMEDIATE")
      writerState.depth += 1
      defer { writerState.depth -= 1 }
      do {
        result = try body(connection)
        try connection.execute("COMMIT")
        actions = writerState.takeActions()
        wakes = connection.takeCommitWake()
      } catch {
        try? connection.execute("ROLLBACK")
        _ = writerState.takeActions()
        _ = connection.takeCommitWake()
        throw error
      }
    }
    if wakes { for observer in commitObservers.withLock({ $0 }) { observer() } }
    for action in actions { action() }
    return result
  }

  /// Registers `action` to run once the write transaction now running has committed (after the
  /// commit observers, in registration order); it is dropped if that transaction (or its
  /// savepoint) rolls back. Outside a `write` body there is nothing to wait for: it runs at once.
  public func afterCommit(_ action: @escaping @Sendable () -> Void) {
    writerLock.lock()
    let pending = writerState.depth > 0
    if pending { writerState.actions.append(action) }
    writerLock.unlock()
    if !pending { action() }
  }

  private func inSavepoint<T>(_ body: (any SQLConnection) throws -> T) throws -> T {
    let connection = writer.connection
    // Once the batch transaction is gone, a SAVEPOINT would open (and RELEASE commit) a
    // transaction of its own, outside the batch whose failure its caller will be told.
    guard !writerState.batchRolledBack else { throw Self.batchRolledBack }
    // As outside a batch, a write inside a write is a mistake, not a nested transaction.
    guard writerState.depth == 0 else {
      throw StorageError.misuse("write called inside a write; a transaction is already open")
    }
    writerState.depth += 1
    defer { writerState.depth -= 1 }
    let mark = writerState.actions.count
    try connection.execute("SAVEPOINT write")
    do {
      let result = try body(connection)
      try connection.execute("RELEASE write")
      return result
    } catch {
      if Self.inAutocommit(connection) {
        // SQLite (or an `OR ROLLBACK` clause) ended the whole transaction: every write of the
        // batch so far is undone, so the batch fails.
        writerState.batchRolledBack = true
      } else {
        try? connection.execute("ROLLBACK TO write")
        try? connection.execute("RELEASE write")
      }
      writerState.actions.removeSubrange(mark...)
      throw error
    }
  }

  /// The error of every write of a batch whose transaction one of them rolled back.
  static let batchRolledBack = StorageError.engine(
    code: SQLITE_ABORT, message: "a write of the batch rolled back its whole transaction", sql: nil)

  /// Whether `connection` has no transaction open.
  private static func inAutocommit(_ connection: SQLiteConnection) -> Bool {
    guard let handle = try? connection.rawHandle() else { return true }
    return sqlite3_get_autocommit(handle) != 0
  }

  /// Runs `body` in a read transaction on a reader connection: it sees one consistent snapshot
  /// of committed data and never waits for the writer.
  public func read<T>(_ body: (any SQLConnection) throws -> T) throws -> T {
    guard readerCount > 0 else {
      // In-memory database: the writer connection is the only one that sees the data.
      writerLock.lock()
      defer { writerLock.unlock() }
      guard !closed.load(ordering: .acquiring) else { throw StorageError.closed }
      return try Self.inReadTransaction(writer.connection, body)
    }
    readerPermits.wait()
    defer { readerPermits.signal() }
    guard !closed.load(ordering: .acquiring), let slot = readers.withLock({ $0.popLast() }) else {
      throw StorageError.closed
    }
    defer { readers.withLock { $0.append(slot) } }
    return try Self.inReadTransaction(slot.connection, body)
  }

  /// Runs `body` (which calls `write`, perhaps several times) on the writer's serial queue,
  /// for async callers whose transactions are wrapped in their own helpers. Only that queue's one
  /// thread ever waits for the write lock, so a burst of writes does not park a pool thread per
  /// write on the lock (which starves the rest of the process on a small machine). Unlike
  /// `submitWrite`, it always queues: consumers' writes gain more from committing together than
  /// from skipping the hop.
  ///
  /// Writes that queue up meanwhile are committed together (group commit): one transaction,
  /// each write in its own savepoint, so one that fails is rolled back alone and the others
  /// commit. Every caller is answered after the commit, so nobody sees a write as done before
  /// it is on disk; if the commit itself fails, every write of the batch fails with it.
  public func onWriterQueue<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { continuation in
      enqueueWrite(PendingWrite(body) { continuation.resume(with: $0) })
    }
  }

  /// `onWriterQueue` with a completion instead of `await`, for an HTTP transport's callback:
  /// `completion` is called once, after the batch committed (or failed), on the writer queue or,
  /// when the writer was idle, on the calling thread (`runAloneIfIdle`); keep it short and hand
  /// bigger work on.
  public func submitWrite<T: Sendable>(
    _ body: @escaping @Sendable () throws -> T, completion: @escaping @Sendable (Result<T, any Error>) -> Void
  ) {
    let job = PendingWrite(body, completion: completion)
    if !runAloneIfIdle(job) { enqueueWrite(job) }
  }

  /// Queues `job` for the writer queue's next batch.
  private func enqueueWrite(_ job: PendingWrite) {
    let schedule = pendingWrites.withLock { pending -> Bool in
      pending.jobs.append(job)
      defer { pending.scheduled = true }
      return !pending.scheduled
    }
    if schedule { writeQueue.async { self.drainPendingWrites() } }
  }

  /// Runs `job` as a batch of its own on the calling thread when nothing is queued and nobody
  /// holds the writer: a lone write then costs no hop to the writer thread and back. Only where
  /// a commit does not wait for the disk (`.normal`): a `.full` commit's fsync would hold the
  /// caller's thread (an HTTP transport's, serving other connections), and not when this commit
  /// would finish a checkpoint (`WALCheckpointer.wantsWriterQueue`). Under load the writer is
  /// busy and writes queue up for group commit as before.
  private func runAloneIfIdle(_ job: PendingWrite) -> Bool {
    guard durability == .normal, checkpointer?.wantsWriterQueue != true,
      pendingWrites.withLock({ $0.jobs.isEmpty && !$0.scheduled })
    else {
      return false
    }
    guard writerLock.try() else { return false }
    // The lock is recursive: a write submitted from inside a running write is queued.
    guard !writerState.batchOpen, writerState.depth == 0 else {
      writerLock.unlock()
      return false
    }
    runBatch([job], locked: true)
    return true
  }

  /// Runs the queued writes in batches of at most `maximumBatch`, each batch one transaction.
  ///
  /// One batch per turn of the queue: the next batch queues behind whatever else was put on the
  /// writer queue meanwhile (`writeAsync`, the outbox relay's), so a steady stream of writes
  /// never holds that back.
  private func drainPendingWrites() {
    let jobs = pendingWrites.withLock { pending -> [PendingWrite] in
      let batch = Array(pending.jobs.prefix(Self.maximumBatch))
      pending.jobs.removeFirst(batch.count)
      if batch.isEmpty { pending.scheduled = false }
      return batch
    }
    guard !jobs.isEmpty else { return }
    runBatch(jobs)
    writeQueue.async { self.drainPendingWrites() }
  }

  /// Runs `jobs` in one transaction (taking the writer lock unless the caller holds it) and
  /// answers each.
  private func runBatch(_ jobs: [PendingWrite], locked: Bool = false) {
    if !locked { writerLock.lock() }
    var failure: (any Error)?
    var actions: [@Sendable () -> Void] = []
    var wakes = false
    if closed.load(ordering: .acquiring) {
      failure = StorageError.closed
    } else {
      let connection = writer.connection
      do {
        try connection.execute("BEGIN IMMEDIATE")
        writerState.batchOpen = true
        writerState.batchRolledBack = false
        for job in jobs where !writerState.batchRolledBack { job.run() }
        writerState.batchOpen = false
        do {
          if writerState.batchRolledBack { throw Self.batchRolledBack }
          try connection.execute("COMMIT")
          actions = writerState.takeActions()
        } catch {
          try? connection.execute("ROLLBACK")
          _ = writerState.takeActions()
          failure = error
        }
        wakes = connection.takeCommitWake() && failure == nil
      } catch {
        writerState.batchOpen = false
        failure = error
      }
    }
    writerLock.unlock()
    if failure == nil {
      if wakes { for observer in commitObservers.withLock({ $0 }) { observer() } }
      for action in actions { action() }
    } else {
      logger.error("batched write failed; every write of the batch is refused", ["error": "\(failure!)"])
    }
    for job in jobs { job.finish(failure) }
  }

  /// `read` on the database's reader queue, for async callers.
  public func readAsync<T: Sendable>(
    _ body: @escaping @Sendable (any SQLConnection) throws -> T
  ) async throws -> T {
    try await withCheckedThrowingContinuation { continuation in
      readQueue.async {
        continuation.resume(with: Result { try self.read(body) })
      }
    }
  }

  /// Registers `observer` to be called after every committed write (on the writing thread,
  /// outside the lock). Keep it cheap: it is how the outbox relay is woken.
  public func onCommit(_ observer: @escaping @Sendable () -> Void) {
    commitObservers.withLock { $0.append(observer) }
  }

  /// The checkpointer's bulk copies so far (tests).
  var checkpoints: Int { checkpointer?.checkpoints ?? 0 }

  /// The schema version recorded in `PRAGMA user_version`.
  public func schemaVersion() throws -> Int {
    try read { try $0.queryOne("PRAGMA user_version")?.int(0) ?? 0 }
  }

  /// Closes every connection; later calls throw `StorageError.closed`. Waits for running reads
  /// and writes to finish. Idempotent.
  public func close() {
    writerLock.lock()
    defer { writerLock.unlock() }
    guard !closed.exchange(true, ordering: .acquiringAndReleasing) else { return }
    checkpointer?.stop()
    writer.connection.close()
    for _ in 0..<readerCount { readerPermits.wait() }
    for slot in readers.withLock({ $0 }) { slot.connection.close() }
    for _ in 0..<readerCount { readerPermits.signal() }
  }

  // MARK: - Internals

  private static func inReadTransaction<T>(
    _ connection: SQLiteConnection, _ body: (any SQLConnection) throws -> T
  ) throws -> T {
    try connection.execute("BEGIN DEFERRED")
    do {
      let result = try body(connection)
      try connection.execute("COMMIT")
      return result
    } catch {
      try? connection.execute("ROLLBACK")
      throw error
    }
  }

  private static func migrate(_ connection: SQLiteConnection, _ migrations: [Migration], logger: Logger)
    throws
  {
    let current = try connection.queryOne("PRAGMA user_version")?.int(0) ?? 0
    if let latest = migrations.last?.version, current > latest {
      throw StorageError.invalidMigrations(
        "database is at version \(current), newer than the latest known migration \(latest)")
    }
    for migration in migrations where migration.version > current {
      do {
        try connection.execute("BEGIN IMMEDIATE")
        do {
          try connection.executeScript(migration.sql)
          // PRAGMA takes no bindings; the version is an Int, so interpolation is safe.
          try connection.executeScript("PRAGMA user_version = \(migration.version)")
          try connection.execute("COMMIT")
        } catch {
          try? connection.execute("ROLLBACK")
          throw error
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

/// A connection owned by the database and only handed out under its lock or reader permit.
private final class ConnectionSlot: @unchecked Sendable {
  let connection: SQLiteConnection
  init(_ connection: SQLiteConnection) { self.connection = connection }
}

/// The tables every service gets: the transactional outbox, the lease that lets one relay at a
/// time publish it, and the consumer inbox.
enum FrameworkSchema {
  static let sql = """
    \(outbox("IF NOT EXISTS outbox"));
    CREATE TABLE IF NOT EXISTS inbox (
      consumer TEXT NOT NULL,
      message_id TEXT NOT NULL,
      processed_at REAL NOT NULL,
      PRIMARY KEY (consumer, message_id)
    ) WITHOUT ROWID;
    CREATE INDEX IF NOT EXISTS inbox_processed_at ON inbox (processed_at);
    CREATE TABLE IF NOT EXISTS outbox_lease (
      id INTEGER PRIMARY KEY CHECK (id = 1),
      owner TEXT NOT NULL,
      expires_at REAL NOT NULL
    );
    """

  /// The outbox's table. `message_id` has no index: ids come from the services' generators, and
  /// an index on them (random keys) cost every event a B-tree insert and a delete.
  private static func outbox(_ name: String) -> String {
    """
    CREATE TABLE \(name) (
      seq INTEGER PRIMARY KEY AUTOINCREMENT,
      message_id TEXT NOT NULL,
      exchange TEXT NOT NULL,
      routing_key TEXT NOT NULL,
      type TEXT NOT NULL,
      correlation_id TEXT,
      timestamp REAL NOT NULL,
      body BLOB NOT NULL,
      created_at REAL NOT NULL DEFAULT ((julianday('now') - 2440587.5) * 86400.0)
    )
    """
  }

  /// Brings an outbox made before that change to the table above: SQLite cannot drop a column's
  /// UNIQUE, so the table is rebuilt with its rows and its `seq` counter, in one transaction.
  static func upgrade(_ connection: SQLiteConnection) throws {
    let unique = try connection.queryOne(
      "SELECT 1 FROM sqlite_master WHERE type = 'index' AND name = 'sqlite_autoindex_outbox_1'")
    guard unique != nil else { return }
    try connection.execute("BEGIN IMMEDIATE")
    do {
      try connection.executeScript(
        """
        \(outbox("outbox_rebuilt"));
        INSERT INTO outbox_rebuilt SELECT seq, message_id, exchange, routing_key, type, correlation_id,
          timestamp, body, created_at FROM outbox ORDER BY seq;
        DELETE FROM sqlite_sequence WHERE name = 'outbox_rebuilt';
        INSERT INTO sqlite_sequence (name, seq) SELECT 'outbox_rebuilt', seq FROM sqlite_sequence
          WHERE name = 'outbox';
        DROP TABLE outbox;
        ALTER TABLE outbox_rebuilt RENAME TO outbox;
        COMMIT;
        """)
    } catch {
      try? connection.execute("ROLLBACK")
      throw error
    }
  }
}

/// One write waiting for a batch: `run` does it (inside the batch transaction) and keeps its
/// outcome, `finish` answers its caller after the commit (with the batch's error if it failed).
private final class PendingWrite: Sendable {
  let run: @Sendable () -> Void
  let finish: @Sendable ((any Error)?) -> Void

  init(run: @escaping @Sendable () -> Void, finish: @escaping @Sendable ((any Error)?) -> Void) {
    self.run = run
    self.finish = finish
  }

  /// Runs `body`; after the commit `completion` gets its result, or the batch's error.
  convenience init<T: Sendable>(
    _ body: @escaping @Sendable () throws -> T, completion: @escaping @Sendable (Result<T, any Error>) -> Void
  ) {
    let outcome = OutcomeBox<T>()
    self.init(
      run: { outcome.result = Result { try body() } },
      finish: { failure in
        if let failure {
          completion(.failure(failure))
        } else {
          completion(outcome.result ?? .failure(StorageError.closed))
        }
      })
  }
}

/// A job's outcome, written by the writer thread and read after the commit (the batch's lock
/// hand-off orders the two).
private final class OutcomeBox<T>: @unchecked Sendable {
  var result: Result<T, any Error>?
}

/// What `SQLiteDatabase` keeps about the running write; only touched with its writer lock held.
private final class WriterState: @unchecked Sendable {
  var batchOpen = false
  /// How many `write` bodies are running (0 or 1; a nested call is refused).
  var depth = 0
  /// A write of the open batch ended its transaction (the batch fails as a whole).
  var batchRolledBack = false
  var actions: [@Sendable () -> Void] = []

  func takeActions() -> [@Sendable () -> Void] {
    defer { actions = [] }
    return actions
  }
}
