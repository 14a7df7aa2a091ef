import Foundation
import GrocerDatabase
import GrocerRuntime
import GrocerStorage

/// The engines a store or use-case test runs on: `@Test(arguments: TestEngine.allCases)`, then
/// `let location = try engine.freshLocation()` and `defer { location.remove() }`.
public enum TestEngine: String, CaseIterable, Sendable, CustomStringConvertible {
  case sqlite
  case postgres

  public var description: String { rawValue }

  /// The engine of the tests that run on one: `GROCER_DB` (`make test DB=postgres` runs the
  /// whole suite on PostgreSQL), SQLite by default.
  public static var selected: TestEngine {
    ProcessInfo.processInfo.environment["GROCER_DB"].flatMap(TestEngine.init(rawValue:)) ?? .sqlite
  }

  /// A new, empty database of this engine: a SQLite file in a temporary folder, or a fresh
  /// database on the local PostgreSQL (started if needed).
  public func freshLocation(_ prefix: String = "test") throws -> TestLocation {
    switch self {
    case .sqlite:
      let folder = FileManager.default.temporaryDirectory.appendingPathComponent(
        "grocer-\(prefix)-\(UUID().uuidString)")
      return TestLocation(
        location: .sqlite(path: folder.appendingPathComponent("service.sqlite").path), folder: folder)
    case .postgres:
      return TestLocation(location: .postgres(url: try TestPostgres.freshDatabase(prefix)), folder: nil)
    }
  }
}

/// A database location made for one test, and how to throw it away afterwards.
public struct TestLocation: Sendable {
  public let location: DatabaseLocation
  let folder: URL?

  /// The settings a service's configuration reads it from (`GROCER_DATABASE_URL` for PostgreSQL).
  public var environment: [String: String] {
    if case .postgres(let url) = location { return ["GROCER_DATABASE_URL": url] }
    return [:]
  }

  public func open(migrations: [Migration], logger: Logger = .discarding()) throws -> any SQLDatabase {
    try location.open(migrations: migrations, logger: logger)
  }

  /// Deletes the SQLite folder, or gives the PostgreSQL database back to be emptied and used
  /// again (its connections are ended; in the background, `TestPostgres.giveBack`).
  public func remove() {
    switch location {
    case .sqlite: if let folder { try? FileManager.default.removeItem(at: folder) }
    case .postgres(let url): TestPostgres.giveBack(url)
    }
  }
}

/// Removes a test's database when the fixture holding it is released (fixtures are structs
/// without a deinit of their own). PostgreSQL's are dropped with their connections ended.
public final class DatabaseCleanup: Sendable {
  public let location: TestLocation

  public init(_ location: TestLocation) { self.location = location }

  deinit { location.remove() }
}
