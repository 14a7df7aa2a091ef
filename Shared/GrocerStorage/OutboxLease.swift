import Foundation
import GrocerCore

/// Which relay may publish the outbox: replicas of a service that share one database each run a
/// relay, and without a lease every one of them would publish every row (duplicates, and twice
/// the broker's work). The holder renews it while it runs; if it dies, another relay takes over
/// once the lease has expired.
struct OutboxLease: Sendable {
  let owner: String
  let duration: TimeInterval

  /// Takes or renews the lease at `now`; false while another owner holds an unexpired one.
  func acquire(at now: Date, in connection: any SQLConnection) throws -> Bool {
    let moment = now.timeIntervalSince1970
    if let row = try connection.queryOne("SELECT owner, expires_at FROM outbox_lease WHERE id = 1"),
      try row.string(0) != owner, try row.double(1) > moment, !Self.isDeadProcess(try row.string(0))
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
  func heldByAnother(at now: Date, in connection: any SQLConnection) throws -> Bool {
    guard let row = try connection.queryOne("SELECT owner, expires_at FROM outbox_lease WHERE id = 1") else {
      return false
    }
    let holder = try row.string(0)
    return try holder != owner && row.double(1) > now.timeIntervalSince1970 && !Self.isDeadProcess(holder)
  }

  /// An owner name for this relay: `<host>/<pid>/<random>`, so a relay restarted on the same host
  /// after a crash (kill -9 leaves the lease unexpired) sees that the holder's process is gone and
  /// takes over at once instead of waiting out the lease.
  static func processOwner() -> String {
    "\(ProcessInfo.processInfo.hostName)/\(getpid())/\(RandomIDs().next())"
  }

  /// True only when `owner` names a process on this host that no longer exists. A lease of
  /// another host (a replica on another machine), or in another form, is never judged here.
  static func isDeadProcess(_ owner: String) -> Bool {
    let parts = owner.split(separator: "/")
    guard parts.count == 3, parts[0] == ProcessInfo.processInfo.hostName, let pid = Int32(parts[1]),
      pid > 0, pid != getpid()
    else { return false }
    return kill(pid, 0) == -1 && errno == ESRCH
  }

  /// Gives the lease up so another relay can take over at once.
  func release(in connection: any SQLConnection) throws {
    try connection.execute("UPDATE outbox_lease SET expires_at = 0 WHERE id = 1 AND owner = ?", owner)
  }
}
