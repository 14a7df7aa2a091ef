import Foundation
import GrocerPostgres
import GrocerRuntime
import GrocerSQLite
import GrocerStorage

/// Where a service keeps its data, and the one place that picks the engine for it: the SQLite
/// file in its data folder (the embedded default), or a PostgreSQL database when
/// `GROCER_DATABASE_URL` names one (what lets a service run as several replicas).
public enum DatabaseLocation: Sendable, Hashable, CustomStringConvertible {
  case sqlite(path: String)
  case postgres(url: String)

  /// The PostgreSQL database the setting `key` names when it is set, else the SQLite file at
  /// `sqlitePath`.
  public init(settings: Settings, key: String = "GROCER_DATABASE_URL", sqlitePath: String)
    throws(StorageError)
  {
    let url = settings.string(key, default: "")
    if url.isEmpty {
      self = .sqlite(path: sqlitePath)
    } else if url.hasPrefix("postgresql://") || url.hasPrefix("postgres://") {
      self = .postgres(url: url)
    } else {
      throw .open(path: url, message: "\(key) must be a postgresql:// URL")
    }
  }

  public var engine: String {
    switch self {
    case .sqlite: "sqlite"
    case .postgres: "postgresql"
    }
  }

  public var description: String {
    switch self {
    case .sqlite(let path): "sqlite:\(path)"
    case .postgres(let url): PostgresConnection.redacted(url)
    }
  }

  /// Opens and migrates the database. `durability` and `readers` are SQLite's (PostgreSQL's
  /// commits are always on disk when they return); `poolSize` is PostgreSQL's.
  public func open(
    migrations: [Migration], durability: SQLiteDatabase.Durability = .normal, readers: Int = 2,
    poolSize: Int = 8, logger: Logger
  ) throws -> any SQLDatabase {
    switch self {
    case .sqlite(let path):
      try SQLiteDatabase(
        path: path, migrations: migrations, durability: durability, readers: readers, logger: logger)
    case .postgres(let url):
      try PostgresDatabase(url: url, migrations: migrations, poolSize: poolSize, logger: logger)
    }
  }
}
