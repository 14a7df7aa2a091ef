import Foundation

/// Which relay may publish the outbox: replicas of a service that share one database each run a
/// relay, and without a lease every one of them would publish every row (duplicates, and twice
/// the broker's work). The holder renews it while it runs; if it dies, another relay takes over
/// once the lease has expired.
struct OutboxLease: Sendable {
  let owner: String
  let duration: TimeInterval

  /// Takes or renews the lease at `now`; false while another owner holds an unexpired one.
  func acquire(at now: Date, in connection: SQLiteConnection) throws -> Bool {
    let moment = now.timeIntervalSince1970
    if let row = try connection.queryOne("SELECT owner, expires_at FROM outbox_lease WHERE id = 1"),
      try row.string(0) != owner, try row.double(1) > moment
    {
      return false
    }
    try connection.execute(
      """
      INSERT INTO outbox_lease (id, owner, expires_at) VALUES (1, ?, ?)
      ON CONFLICT (id) DO UPDATE SET owner = excluded.owner, expires_at = excluded.expires_at
      """, owner, moment + duration)
    return true
  }

  /// Whether another owner holds an unexpired lease at `now` (a read, no write).
  func heldByAnother(at now: Date, in connection: SQLiteConnection) throws -> Bool {
    guard let row = try connection.queryOne("SELECT owner, expires_at FROM outbox_lease WHERE id = 1") else {
      return false
    }
    return try row.string(0) != owner && row.double(1) > now.timeIntervalSince1970
  }

  /// Gives the lease up so another relay can take over at once.
  func release(in connection: SQLiteConnection) throws {
    try connection.execute("UPDATE outbox_lease SET expires_at = 0 WHERE id = 1 AND owner = ?", owner)
  }
}
