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

extension Migration {
  /// Gives the subjects of events still waiting in the outbox their kind (`kinds` maps an event
  /// type to it: `tracking.updated` → `tracking`), for the change that made subjects name their
  /// kind. The envelope is rewritten where it was written, as text (`"subject":"` then the id).
  /// The dialects differ: PostgreSQL keeps the body as `bytea`, converted to text and back.
  public static func prefixingOutboxSubjects(version: Int, kinds: [(type: String, kind: String)]) -> Migration
  {
    func statement(_ type: String, _ kind: String, text: String, bytes: (String) -> String, contains: String)
      -> String
    {
      let from = #"'"subject":"'"#
      let to = #"'"subject":""# + kind + #"/'"#
      return "UPDATE outbox SET body = \(bytes("replace(\(text), \(from), \(to))")) WHERE type = '\(type)'"
        + " AND \(contains);"
    }
    let sqlite = kinds.map { type, kind in
      statement(
        type, kind, text: "CAST(body AS TEXT)", bytes: { "CAST(\($0) AS BLOB)" },
        contains: #"instr(CAST(body AS TEXT), '"subject":""# + kind + #"/') = 0"#)
    }
    let postgres = kinds.map { type, kind in
      statement(
        type, kind, text: "convert_from(body, 'UTF8')", bytes: { "convert_to(\($0), 'UTF8')" },
        contains: #"position('"subject":""# + kind + #"/' in convert_from(body, 'UTF8')) = 0"#)
    }
    return Migration(
      version: version, name: "event subjects name their kind",
      sql: sqlite.joined(separator: "\n"), postgres: postgres.joined(separator: "\n"))
  }
}
