/// One connection of a database engine, handed to the closure of `SQLDatabase.write` or `read`.
///
/// Not `Sendable` and only valid inside that closure: the database serializes access to it.
/// Statements take their values as bindings (`?` placeholders), never spliced into the text.
public protocol SQLConnection: AnyObject {
  /// Rows changed by the last INSERT, UPDATE or DELETE on this connection.
  var changes: Int { get }

  /// Runs one statement, ignoring any rows it returns.
  func execute(_ sql: String, bindings: [any SQLBindable]) throws

  /// Runs one statement and returns all its rows.
  func query(_ sql: String, bindings: [any SQLBindable]) throws -> [SQLRow]

  /// The first row of a statement, or nil when it returns none.
  func queryOne(_ sql: String, bindings: [any SQLBindable]) throws -> SQLRow?

  /// Runs several `;`-separated statements without bindings (schema scripts).
  func executeScript(_ sql: String) throws

  /// Asks for the database's commit observers (the outbox relay) to be called once the write
  /// running on this connection commits: `Outbox.append` does, so a commit that wrote no event
  /// wakes nobody.
  func wakeCommitObservers()

  /// What a store appends to a SELECT of rows it will change, so that inside
  /// `SQLDatabase.writeLockingRows` the rows are locked until the commit and read as their newest
  /// version (PostgreSQL: ` FOR UPDATE`); empty everywhere else.
  var lockClause: String { get }

  /// The engine's SQL dialect, for the few statements the engines spell differently (several
  /// writes as one statement, `executeTogether`; an upsert that returns the row it replaced);
  /// everything else is written once for both.
  var dialect: SQLDialect { get }
}

/// The SQL a connection speaks.
public enum SQLDialect: Sendable, Hashable {
  case sqlite, postgresql
}

extension SQLConnection {
  public var lockClause: String { "" }
  public var dialect: SQLDialect { .sqlite }

  public func execute(_ sql: String, _ bindings: any SQLBindable...) throws {
    try execute(sql, bindings: bindings)
  }

  public func query(_ sql: String, _ bindings: any SQLBindable...) throws -> [SQLRow] {
    try query(sql, bindings: bindings)
  }

  public func queryOne(_ sql: String, _ bindings: any SQLBindable...) throws -> SQLRow? {
    try queryOne(sql, bindings: bindings)
  }

  /// Runs writes of different rows, none reading what another wrote and none needing to happen
  /// before another (an outbox's rows, numbered as inserted, do): on PostgreSQL as one statement
  /// (each but the last a `WITH` part, which always runs to its end, in no promised order; all
  /// of them see the rows as they were before any), a round trip instead of one each; elsewhere
  /// one by one. `changes` afterwards counts the last one's rows only.
  public func executeTogether(_ statements: [(sql: String, bindings: [any SQLBindable])]) throws {
    guard dialect == .postgresql, statements.count > 1, let last = statements.last else {
      for statement in statements { try execute(statement.sql, bindings: statement.bindings) }
      return
    }
    let parts = statements.dropLast().enumerated().map { "w\($0.offset) AS (\($0.element.sql))" }
    try execute(
      "WITH " + parts.joined(separator: ", ") + " " + last.sql,
      bindings: statements.flatMap(\.bindings))
  }
}

/// A service's database, whatever the engine: transactions, the writer queue async callers
/// use, and the hooks the outbox relay and the reply caches need. Stores and use cases are
/// written against this; only a composition root names the engine (`GrocerSQLite`).
///
/// `write` and `read` block the calling thread; from async code use `writeAsync`, `readAsync`
/// or `onWriterQueue`, which keep the cooperative pool free. A `write` inside a `write` throws.
public protocol SQLDatabase: AnyObject, Sendable {
  /// Whether other processes (a service's replicas) may write this database, so that what one
  /// process remembers of it can go stale without it seeing the write. SQLite: no (a service
  /// runs as one process on its file); PostgreSQL: yes.
  var mayHaveOtherWriters: Bool { get }

  /// Runs `body` in a write transaction serialized with every other write; an error thrown
  /// rolls it back and is rethrown. Inside a batch (`onWriterQueue`) it is the batch's savepoint.
  func write<T>(_ body: (any SQLConnection) throws -> T) throws -> T

  /// `write` for a hot read-modify-write of a few known rows (stock counts every order shares):
  /// the rows it reads with `lockClause` are locked, so concurrent writers of one row wait for
  /// each other's commit instead of one failing and running again. Its statements see what was
  /// committed before each of them, not one snapshot, so it must read every row its decision
  /// depends on with `lockClause`, in a fixed order (key order) so that two writers do not lock
  /// each other out. SQLite's single writer needs nothing of this: there it is `write`.
  func writeLockingRows<T>(_ body: (any SQLConnection) throws -> T) throws -> T

  /// Runs `body` in a read transaction that sees one consistent snapshot of committed data.
  func read<T>(_ body: (any SQLConnection) throws -> T) throws -> T

  /// `read` off the cooperative pool, for async callers.
  func readAsync<T: Sendable>(_ body: @escaping @Sendable (any SQLConnection) throws -> T) async throws -> T

  /// Runs `body` (which calls `write`, perhaps several times) on the writer's queue; writes that
  /// queue up meanwhile commit together, each in its own savepoint, and every caller is answered
  /// after the commit.
  func onWriterQueue<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T

  /// Runs `jobs` (use cases that write) on the writer's queue and returns each one's error, or
  /// nil where it committed: a job that throws is undone alone, the others commit. Where the
  /// engine can, the jobs share one transaction (SQLite: the batch's savepoints; PostgreSQL: one
  /// transaction, run again job by job when any of them fails), so a consumer's batch of events
  /// costs one commit. A job must be one that may run twice, as any write's closure.
  func writeEach(_ jobs: [@Sendable () throws -> Void]) async throws -> [(any Error)?]

  /// `onWriterQueue` with a completion, called once after the batch committed (or failed);
  /// perhaps on the calling thread, before this returns (SQLite, when the writer was idle).
  func submitWrite<T: Sendable>(
    _ body: @escaping @Sendable () throws -> T, completion: @escaping @Sendable (Result<T, any Error>) -> Void
  )

  /// Runs `action` once the write transaction now running has committed; dropped if it rolls
  /// back; at once outside a write.
  func afterCommit(_ action: @escaping @Sendable () -> Void)

  /// Calls `observer` after every committed write that asked for it (`wakeCommitObservers`, which
  /// `Outbox.append` calls). Keep it cheap: it is how the outbox relay is woken.
  func onCommit(_ observer: @escaping @Sendable () -> Void)

  /// Told by this process's outbox relay whether it holds the outbox lease. While it does, its
  /// own process's outbox writes wake it (`onCommit`) and no other process need hear of them;
  /// while it does not, an engine shared by replicas tells theirs (PostgreSQL: a NOTIFY in the
  /// writing transaction). The default ignores it.
  func outboxRelayedHere(_ relayed: Bool)

  /// The version of the last migration applied.
  func schemaVersion() throws -> Int

  /// Closes every connection; later calls throw `StorageError.closed`. Idempotent.
  func close()
}

extension SQLDatabase {
  public func outboxRelayedHere(_ relayed: Bool) {}

  public func writeLockingRows<T>(_ body: (any SQLConnection) throws -> T) throws -> T {
    try write(body)
  }

  public func writeEach(_ jobs: [@Sendable () throws -> Void]) async throws -> [(any Error)?] {
    try await onWriterQueue { jobs.map(runCapturingError) }
  }

  /// `write` on the writer queue, for async callers (committed with the writes queued meanwhile).
  public func writeAsync<T: Sendable>(
    _ body: @escaping @Sendable (any SQLConnection) throws -> T
  ) async throws -> T {
    try await onWriterQueue { try self.write(body) }
  }

  /// Whether the database answers a trivial query (readiness checks).
  public func isReachable() -> Bool {
    (try? read { try $0.queryOne("SELECT 1") }) != nil
  }
}

/// What `writeEach` answers for one job: nil when it ran through, else its error.
public func runCapturingError(_ job: () throws -> Void) -> (any Error)? {
  do {
    try job()
    return nil
  } catch { return error }
}
