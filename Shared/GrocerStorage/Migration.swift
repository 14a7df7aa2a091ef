/// One numbered schema change of a service.
///
/// Versions are applied in increasing order, each in its own transaction, and the last applied
/// version is kept in `PRAGMA user_version`. `sql` may hold several statements. Never edit a
/// migration that has shipped: add a new one.
public struct Migration: Hashable, Sendable {
  public var version: Int
  public var name: String
  public var sql: String

  public init(version: Int, name: String, sql: String) {
    self.version = version
    self.name = name
    self.sql = sql
  }
}
