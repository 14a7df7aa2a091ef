import GrocerCore

/// Everything the storage layer throws. The engine's own result code and message are kept, so a
/// caller can tell a constraint violation (a duplicate key, a failed CHECK) from anything else.
public indirect enum StorageError: Error, Hashable, Sendable, CustomStringConvertible {
  /// A UNIQUE, PRIMARY KEY, FOREIGN KEY, CHECK or NOT NULL constraint failed.
  /// `code` is the engine's (SQLite's extended result code, e.g. 2067 for SQLITE_CONSTRAINT_UNIQUE).
  case constraint(code: Int32, message: String)
  /// The database stayed locked longer than the busy timeout.
  case busy(code: Int32, message: String)
  /// Any other error of the engine (bad SQL, I/O error, …), with the statement when known.
  case engine(code: Int32, message: String, sql: String?)
  /// The database file could not be opened or configured.
  case open(path: String, message: String)
  /// Migration `version` failed and was rolled back; the database stays at the previous version.
  case migration(version: Int, name: String, underlying: StorageError)
  /// The migration list is not usable (versions not increasing, database newer than the code).
  case invalidMigrations(String)
  /// A row accessor asked for a column that is missing or holds another type.
  case column(String)
  /// The API was used in a way the engine cannot run (several statements in `execute`, wrong
  /// number of bindings).
  case misuse(String)
  /// The database was closed.
  case closed
  /// The database server went away or does not take connections now (a restart, a failover,
  /// too many connections): the same work may well succeed in a moment.
  case unavailable(message: String)

  /// True for constraint violations, the error a caller most often handles.
  public var isConstraintViolation: Bool {
    if case .constraint = self { return true }
    if case .migration(_, _, let underlying) = self { return underlying.isConstraintViolation }
    return false
  }

  /// True when the database cannot be reached or is locked for now rather than refusing this
  /// work: a consumer waits and tries the same delivery again instead of returning it.
  public var isUnavailable: Bool {
    switch self {
    case .open, .closed, .busy, .unavailable: true
    case .migration(_, _, let underlying): underlying.isUnavailable
    default: false
    }
  }

  public var description: String {
    switch self {
    case .constraint(let code, let message): "constraint violation (\(code)): \(message)"
    case .busy(let code, let message): "database busy (\(code)): \(message)"
    case .engine(let code, let message, let sql):
      "database error (\(code)): \(message)" + (sql.map { " in `\($0)`" } ?? "")
    case .open(let path, let message): "cannot open database at \(path): \(message)"
    case .migration(let version, let name, let underlying):
      "migration \(version) (\(name)) failed: \(underlying)"
    case .invalidMigrations(let reason): "invalid migrations: \(reason)"
    case .column(let reason): "column error: \(reason)"
    case .misuse(let reason): "storage misuse: \(reason)"
    case .closed: "database is closed"
    case .unavailable(let message): "database unavailable: \(message)"
    }
  }
}

extension StorageError: OutageReporting {}
