import Foundation
import GrocerPostgres
import GrocerRuntime
import Synchronization

/// The local PostgreSQL the tests run against: found on 127.0.0.1:5432 (`GROCER_POSTGRES_PORT`)
/// or started with `deploy/local/postgres.sh start`, which initialises `var/postgres` on first
/// use. Each test gets a database of its own. Tests never stop the server: others share it.
public enum TestPostgres {
  public static let script = TestBroker.repositoryRoot.appendingPathComponent("deploy/local/postgres.sh").path

  public struct Unavailable: Error, CustomStringConvertible {
    public var output: String
    public var description: String { "PostgreSQL is not reachable and could not be started: \(output)" }
  }

  /// A `deploy/local/postgres.sh` command that failed once the server ran (a bad name, bad SQL).
  public struct CommandFailed: Error, CustomStringConvertible {
    public var arguments: [String]
    public var output: String
    public var description: String { "postgres.sh \(arguments.joined(separator: " ")) failed: \(output)" }
  }

  private static let started: Result<Void, Unavailable> = Result { try run(["start"]) }.map { _ in () }
    .mapError { Unavailable(output: "\($0)") }

  /// Makes sure the server runs; throws (failing the test) if it cannot.
  public static func ensureRunning() throws {
    try started.get()
  }

  /// Creates a new, empty database and returns its URL (`GROCER_DATABASE_URL`'s form). One that
  /// a finished test gave back, emptied, is renamed when there is one: renaming takes a
  /// millisecond, where a new database copies template1 (about 200 ms on every fixture).
  public static func freshDatabase(_ prefix: String = "test") throws -> String {
    let url = try unusedDatabase(prefix)
    let name = try databaseName(url)
    while let spare = spares.withLock({ $0.popLast() }) {
      if (try? administer("ALTER DATABASE \(spare) RENAME TO \(name)")) != nil { return url }
    }
    try create(url)
    return url
  }

  /// The URL of a database that does not exist yet (`create` makes it).
  public static func unusedDatabase(_ prefix: String = "test") throws -> String {
    try ensureRunning()
    let name =
      "\(prefix)_\(UUID().uuidString.prefix(12).lowercased().replacingOccurrences(of: "-", with: ""))"
    return try serverURL.get() + name
  }

  /// Creates the database `url` names.
  public static func create(_ url: String) throws {
    try administer("CREATE DATABASE \(try databaseName(url))")
  }

  /// Drops a database `freshDatabase` made, closing whatever connections it still has.
  public static func drop(_ url: String) {
    guard let name = try? databaseName(url) else { return }
    try? administer("DROP DATABASE IF EXISTS \(name) WITH (FORCE)")
  }

  /// Gives a finished test's database back, on a queue of its own so the test does not wait:
  /// its connections are ended, it is renamed out of reach and emptied for `freshDatabase` to
  /// hand out again (a drop would cost a checkpoint, 124 ms). The process waits for the queue,
  /// then drops what is left, before it exits.
  public static func giveBack(_ url: String) {
    _ = drainedAtExit
    drops.async {
      guard let name = try? databaseName(url), spares.withLock({ $0.count }) < 16,
        let spare = try? emptied(name)
      else { return drop(url) }
      spares.withLock { $0.append(spare) }
    }
  }

  /// Databases emptied for reuse (only this process knows them; dropped at exit).
  private static let spares = Mutex<[String]>([])

  /// Renames database `name` away from whatever still connects to it and drops everything in
  /// it. Every object the services make lives in schema `public`.
  private static func emptied(_ name: String) throws -> String {
    let spare = "spare_\(UUID().uuidString.prefix(12).lowercased().replacingOccurrences(of: "-", with: ""))"
    try renameAway(name, to: spare)
    do {
      let connection = try PostgresConnection(url: try serverURL.get() + spare)
      try connection.executeScript("DROP SCHEMA public CASCADE; CREATE SCHEMA public")
    } catch {
      try? administer("DROP DATABASE IF EXISTS \(spare) WITH (FORCE)")
      throw error
    }
    return spare
  }

  /// Ends the connections to database `name` and renames it, so none can be made by its name.
  /// A service connects again between the two statements and the rename then fails: it is tried
  /// again, ten times (the server itself waits up to 5 s for ended connections to go).
  private static func renameAway(_ name: String, to newName: String) throws {
    var attempt = 1
    while true {
      do {
        return try administer(
          "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = '\(name)'; ALTER DATABASE \(name) RENAME TO \(newName)"
        )
      } catch {
        guard attempt < 10 else { throw error }
        attempt += 1
        Thread.sleep(forTimeInterval: 0.01)
      }
    }
  }

  /// The URL of the server without a database name: `postgresql://grocer@127.0.0.1:5432/`. The
  /// tests connect over TCP, whose URLs end in the database's name.
  private static let serverURL: Result<String, any Error> = Result {
    String(try tcpURL(database: "postgres").dropLast("postgres".count))
  }

  /// The URL `deploy/local/postgres.sh url` prints for `database` over TCP (its
  /// GROCER_POSTGRES_VIA=tcp; the services default to the Unix socket).
  private static func tcpURL(database: String) throws -> String {
    var environment = ProcessInfo.processInfo.environment
    environment["GROCER_POSTGRES_VIA"] = "tcp"
    let outcome = try Subprocess.runBlocking(
      ["/bin/bash", script, "url", database], environment: environment)
    guard outcome.status == 0 else {
      throw CommandFailed(arguments: ["url", database], output: outcome.output)
    }
    return outcome.output.trimmingCharacters(in: .whitespacesAndNewlines)
  }

  /// The tests' own connection to database `postgres`, for creating and dropping databases
  /// without a psql process each (every fixture on PostgreSQL makes one).
  private static let administration = Mutex<PostgresConnection?>(nil)

  private static func administer(_ sql: String) throws {
    try ensureRunning()
    try administration.withLock { connection in
      var attempt = 1
      while true {
        do {
          if connection?.isBroken ?? true {
            connection = try PostgresConnection(url: try serverURL.get() + "postgres")
          }
          return try connection!.executeScript(sql)
        } catch {
          // A server restarted by a drill ended the connection: connect again, once.
          guard connection?.isBroken ?? true, attempt < 2 else {
            throw CommandFailed(arguments: [sql], output: "\(error)")
          }
          connection = nil
          attempt += 1
        }
      }
    }
  }

  private static let drops = DispatchQueue(label: "grocer.tests.postgres-drops")
  private static let drainedAtExit: Void = {
    atexit {
      drops.sync {}
      for spare in spares.withLock({ $0 }) { try? administer("DROP DATABASE IF EXISTS \(spare)") }
    }
  }()

  /// Runs SQL as the superuser against database `postgres` (e.g. to end other connections).
  @discardableResult
  public static func psql(_ sql: String) throws -> String {
    try run(["psql", "-d", "postgres", "-Atc", sql])
  }

  /// Stops the server the way an operator's fast shutdown does (every connection ended, open
  /// transactions rolled back), then starts it again after `pause` (fault drills).
  public static func restart(after pause: Duration) async throws {
    try run(["stop"])
    try await Task.sleep(for: pause)
    try run(["start"])
  }

  /// Takes the database at `url` away from a running service: its connections are ended (as a
  /// server restart ends them) and it is renamed, so no new one can be made until `bringBack`.
  public static func takeAway(_ url: String) async throws {
    let name = try databaseName(url)
    try renameAway(name, to: "\(name)_away")
  }

  /// Gives back a database `takeAway` took.
  public static func bringBack(_ url: String) throws {
    let name = try databaseName(url)
    try administer("ALTER DATABASE \(name)_away RENAME TO \(name)")
  }

  private static func databaseName(_ url: String) throws -> String {
    guard let name = URL(string: url)?.path.dropFirst(), !name.isEmpty,
      name.allSatisfy({ $0 == "_" || $0.isASCII && ($0.isLowercase || $0.isNumber) })
    else {
      throw CommandFailed(arguments: [url], output: "no database name of lowercase letters, digits and _")
    }
    return String(name)
  }

  /// The rows of `sql` in the database at `url` as a JSON array of objects (read with psql).
  public static func jsonRows(_ url: String, _ sql: String) throws -> String {
    try run([
      "psql", "-X", "-q", "-d", try databaseName(url), "-Atc",
      "SELECT coalesce(json_agg(t), '[]'::json) FROM (\(sql)) t",
    ])
  }

  @discardableResult
  private static func run(_ arguments: [String]) throws -> String {
    let outcome = try Subprocess.runBlocking(["/bin/bash", script] + arguments)
    guard outcome.status == 0 else { throw CommandFailed(arguments: arguments, output: outcome.output) }
    return outcome.output
  }
}
