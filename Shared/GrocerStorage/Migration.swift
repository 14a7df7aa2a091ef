/// One numbered schema change of a service.
///
/// Versions are applied in increasing order, each in its own transaction, and the last applied
/// version is recorded by the engine. `sql` may hold several statements. Never edit a migration
/// that has shipped: add a new one.
///
/// One list serves both engines: `sql` is written for both where it can be, and `postgres`
/// holds PostgreSQL's text for the migrations where the dialects differ (say why there, once).
public struct Migration: Hashable, Sendable {
  public var version: Int
  public var name: String
  public var sql: String
  /// The same change in PostgreSQL's dialect, when `sql` does not run there.
  public var postgres: String?

  public init(version: Int, name: String, sql: String, postgres: String? = nil) {
    self.version = version
    self.name = name
    self.sql = sql
    self.postgres = postgres
  }

  /// Throws unless the versions strictly increase.
  public static func validate(_ migrations: [Migration]) throws(StorageError) {
    var previous = 0
    for migration in migrations {
      guard migration.version > previous else {
        throw .invalidMigrations(
          "version \(migration.version) (\(migration.name)) must be greater than \(previous)")
      }
      previous = migration.version
    }
  }
}
