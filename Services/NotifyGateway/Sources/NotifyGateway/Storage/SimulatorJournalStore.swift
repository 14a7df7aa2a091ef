import APNsSimulator
import Foundation
import GrocerCore
import GrocerDatabase
import GrocerRuntime
import GrocerStorage
import Synchronization

/// The APNs simulator's record on disk: one row per push in a SQLite file of its own in the data
/// folder (`apns-simulator.sqlite`), apart from the service's database so its writes never wait
/// for the gateway's own. A token's older rows go once it has `keep` and half as many again, so
/// pruning costs a statement per token now and then, not per push.
public final class SimulatorJournalStore: SimulatorJournal {
  private let database: any SQLDatabase

  public init(database: any SQLDatabase) throws {
    self.database = database
    let counts = try database.read { db in
      try db.query("SELECT token, count(*) FROM simulator_pushes GROUP BY token").map {
        (try $0.string(0), try $0.int(1))
      }
    }
    rows = Mutex(Dictionary(counts.map { (APNsSimulator.fingerprint($0.0), $0.1) }, uniquingKeysWith: +))
  }

  /// The journal's file in `dataDirectory`, opened and migrated.
  public convenience init(dataDirectory: String, logger: Logger) throws {
    try FileManager.default.createDirectory(atPath: dataDirectory, withIntermediateDirectories: true)
    try self.init(
      database: try DatabaseLocation.sqlite(path: dataDirectory + "/apns-simulator.sqlite").open(
        migrations: Self.migrations, logger: logger))
  }

  static let migrations = [
    Migration(
      version: 1, name: "what each token received",
      sql: """
        CREATE TABLE simulator_pushes (
          id INTEGER PRIMARY KEY AUTOINCREMENT,
          token TEXT NOT NULL,
          received_at REAL NOT NULL,
          status INTEGER NOT NULL,
          reason TEXT,
          headers TEXT NOT NULL,
          body BLOB NOT NULL
        );
        CREATE INDEX simulator_pushes_token ON simulator_pushes(token, id);
        """),
    Migration(
      version: 2, name: "channels",
      sql: """
        CREATE TABLE simulator_channels (
          id TEXT PRIMARY KEY,
          storage_policy INTEGER NOT NULL
        );
        """),
  ]

  public func channels() throws -> [String: Int] {
    try database.read { db in
      Dictionary(
        try db.query("SELECT id, storage_policy FROM simulator_channels").map {
          (try $0.string(0), try $0.int(1))
        }, uniquingKeysWith: { first, _ in first })
    }
  }

  public func saveChannel(_ id: String, storagePolicy: Int) throws {
    try database.write {
      try $0.execute("INSERT INTO simulator_channels (id, storage_policy) VALUES (?, ?)", id, storagePolicy)
    }
  }

  public func deleteChannel(_ id: String) throws {
    try database.write { try $0.execute("DELETE FROM simulator_channels WHERE id = ?", id) }
  }

  public func received(by token: String, keep: Int) throws -> [APNsSimulator.Received] {
    try database.read { db in
      try db.query(
        """
        SELECT received_at, status, reason, headers, body FROM simulator_pushes WHERE token = ?
        ORDER BY id DESC LIMIT ?
        """, token, keep
      ).reversed().map { row in
        APNsSimulator.Received(
          receivedAt: Date(timeIntervalSince1970: try row.double(0)), status: try row.int(1),
          reason: try row.optionalString(2),
          headers: try JSON.decode([String: String].self, from: Data(try row.string(3).utf8)),
          body: Array(try row.data(4)))
      }
    }
  }

  /// Every push the journal holds, oldest first, without its headers (the push load tool reads
  /// a stopped gateway's to time each push).
  public func pushes() throws -> [(token: String, receivedAt: Date, status: Int, body: [UInt8])] {
    try database.read { db in
      try db.query("SELECT token, received_at, status, body FROM simulator_pushes ORDER BY id").map { row in
        (
          try row.string(0), Date(timeIntervalSince1970: try row.double(1)), try row.int(2),
          Array(try row.data(3))
        )
      }
    }
  }

  /// Rows per token, kept in the file (tests).
  func rowCount(of token: String) throws -> Int {
    try database.read {
      try $0.queryOne("SELECT count(*) FROM simulator_pushes WHERE token = ?", token)?.int(0) ?? 0
    }
  }

  /// Headers as a JSON object, written by hand (a row per push).
  static func text(_ headers: [String: String]) -> String {
    var out = JSONBytes(capacity: 256)
    out.beginObject()
    for (name, value) in headers.sorted(by: { $0.key < $1.key }) {
      out.key(name)
      out.string(value)
    }
    out.endObject()
    return String(decoding: out.bytes, as: UTF8.self)
  }

  /// Rows per token (by its fingerprint), so pruning needs no count from the database.
  private let rows: Mutex<[UInt64: Int]>

  /// Rows a statement inserts at most (6 values each, far below SQLite's bound on parameters).
  static let rowsPerInsert = 128

  public func append(_ pushes: [(token: String, received: APNsSimulator.Received)], keep: Int) throws {
    let keys = pushes.map { APNsSimulator.fingerprint($0.token) }
    // The tokens over `keep` and half as many again once these are in (the counts change in
    // place after the write: a copy taken out would copy every token's count per flush).
    let prune = rows.withLock { counts in
      var added: [UInt64: Int] = [:]
      var prune: [String: UInt64] = [:]
      for (index, key) in keys.enumerated() {
        added[key, default: 0] += 1
        if counts[key, default: 0] + added[key]! >= keep + max(1, keep / 2) {
          prune[pushes[index].token] = key
        }
      }
      return prune
    }
    try database.write { db in
      for run in SQLRuns.ranges(pushes.count, largest: Self.rowsPerInsert) {
        let chunk = pushes[run]
        var bindings: [any SQLBindable] = []
        bindings.reserveCapacity(chunk.count * 6)
        for (token, received) in chunk {
          bindings += [
            token, received.receivedAt.timeIntervalSince1970, received.status, received.reason,
            Self.text(received.headers), received.bodyBytes,
          ]
        }
        try db.execute(
          "INSERT INTO simulator_pushes (token, received_at, status, reason, headers, body) VALUES "
            + Array(repeating: "(?, ?, ?, ?, ?, ?)", count: chunk.count).joined(separator: ", "),
          bindings: bindings)
      }
      for token in prune.keys {
        try db.execute(
          """
          DELETE FROM simulator_pushes WHERE token = ? AND id < (
            SELECT MIN(id) FROM (SELECT id FROM simulator_pushes WHERE token = ? ORDER BY id DESC LIMIT ?) newest)
          """, token, token, keep)
      }
    }
    rows.withLock { counts in
      for key in keys { counts[key, default: 0] += 1 }
      for key in prune.values { counts[key] = keep }
    }
  }
}

extension APNsSimulator {
  /// Writes what the simulator recorded to its journal every 100 ms, and once more at shutdown.
  public func journalFlusher(logger: Logger) -> PeriodicTask {
    PeriodicTask(name: "simulator-journal", interval: .milliseconds(100), logger: logger, finalRound: true) {
      try await runBlocking { try self.flush() }
    }
  }
}
