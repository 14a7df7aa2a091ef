import CSQLite
import Foundation
import GrocerStorage

/// One SQLite connection, handed to the closure of `SQLiteDatabase.write` or `read`.
///
/// Not `Sendable` and only valid inside that closure: the database serializes access to it.
/// Statements are prepared once per SQL text and kept in a per-connection cache; after each use
/// they are reset and their bindings cleared, so the next call with the same text skips parsing.
public final class SQLiteConnection: SQLConnection {
  /// Above this many cached statements the cache is emptied, so SQL built at run time (which
  /// should use bindings instead) cannot grow it without bound.
  static let statementCacheLimit = 256

  private var handle: OpaquePointer?
  private var statements: [String: OpaquePointer] = [:]
  /// The column names of each cached statement, read once (not per query).
  private var columnsByStatement: [OpaquePointer: SQLRow.Columns] = [:]
  /// How many times SQL text was compiled (a cache miss); tests use it to see reuse.
  private(set) var prepareCount = 0
  /// Whether the write now running asked for the commit observers (`takeCommitWake` resets it).
  private var wantsCommitWake = false

  init(path: String, flags: Int32) throws(StorageError) {
    var db: OpaquePointer?
    let rc = sqlite3_open_v2(path, &db, flags | SQLITE_OPEN_NOMUTEX, nil)
    guard rc == SQLITE_OK, let db else {
      let message = db.map { String(cString: sqlite3_errmsg($0)) } ?? String(cString: sqlite3_errstr(rc))
      sqlite3_close_v2(db)
      throw .open(path: path, message: message)
    }
    sqlite3_extended_result_codes(db, 1)
    handle = db
  }

  deinit { close() }

  /// Finalizes every cached statement and closes the handle. Idempotent.
  func close() {
    for statement in statements.values { sqlite3_finalize(statement) }
    statements = [:]
    columnsByStatement = [:]
    if let handle { sqlite3_close_v2(handle) }
    handle = nil
  }

  public func wakeCommitObservers() { wantsCommitWake = true }

  /// Whether a write since the last call asked for the commit observers.
  func takeCommitWake() -> Bool {
    defer { wantsCommitWake = false }
    return wantsCommitWake
  }

  /// Rows changed by the last INSERT, UPDATE or DELETE on this connection.
  public var changes: Int {
    guard let handle else { return 0 }
    return Int(sqlite3_changes64(handle))
  }

  /// The rowid of the last successful INSERT on this connection.
  public var lastInsertRowID: Int64 {
    guard let handle else { return 0 }
    return sqlite3_last_insert_rowid(handle)
  }

  /// Runs one statement with bindings given as an array.
  public func execute(_ sql: String, bindings: [any SQLBindable]) throws {
    try withStatement(sql, bindings) { statement in
      while try step(statement, sql) {}
    }
  }

  /// Runs one statement with bindings given as an array and returns all its rows.
  public func query(_ sql: String, bindings: [any SQLBindable]) throws -> [SQLRow] {
    try withStatement(sql, bindings) { statement in
      let columns = columns(of: statement)
      let count = columns.names.count
      var rows: [SQLRow] = []
      while try step(statement, sql) {
        rows.append(SQLRow(columns: columns, values: (0..<count).map { column(statement, Int32($0)) }))
      }
      return rows
    }
  }

  public func queryOne(_ sql: String, bindings: [any SQLBindable]) throws -> SQLRow? {
    try withStatement(sql, bindings) { statement in
      guard try step(statement, sql) else { return nil }
      let columns = columns(of: statement)
      let count = columns.names.count
      return SQLRow(columns: columns, values: (0..<count).map { column(statement, Int32($0)) })
    }
  }

  /// Runs several `;`-separated statements without bindings and without caching (schema scripts).
  public func executeScript(_ sql: String) throws {
    let handle = try open()
    var errorMessage: UnsafeMutablePointer<CChar>?
    let rc = sqlite3_exec(handle, sql, nil, nil, &errorMessage)
    if rc != SQLITE_OK {
      let message = errorMessage.map { String(cString: $0) } ?? String(cString: sqlite3_errstr(rc))
      sqlite3_free(errorMessage)
      throw Self.error(code: sqlite3_extended_errcode(handle), message: message, sql: sql)
    }
  }

  // MARK: - Internals

  private func open() throws(StorageError) -> OpaquePointer {
    guard let handle else { throw .closed }
    return handle
  }

  private func withStatement<R>(
    _ sql: String, _ bindings: [any SQLBindable], _ body: (OpaquePointer) throws -> R
  ) throws -> R {
    let statement = try prepared(sql)
    defer {
      sqlite3_reset(statement)
      sqlite3_clear_bindings(statement)
    }
    let expected = Int(sqlite3_bind_parameter_count(statement))
    guard expected == bindings.count else {
      throw StorageError.misuse("`\(sql)` takes \(expected) bindings, got \(bindings.count)")
    }
    for (offset, binding) in bindings.enumerated() {
      try bind(binding.sqlValue, at: Int32(offset + 1), in: statement, sql)
    }
    return try body(statement)
  }

  private func columns(of statement: OpaquePointer) -> SQLRow.Columns {
    if let known = columnsByStatement[statement] { return known }
    let count = Int(sqlite3_column_count(statement))
    let columns = SQLRow.Columns(
      names: (0..<count).map { String(cString: sqlite3_column_name(statement, Int32($0))) })
    columnsByStatement[statement] = columns
    return columns
  }

  private func prepared(_ sql: String) throws -> OpaquePointer {
    if let cached = statements[sql] { return cached }
    let handle = try open()
    var statement: OpaquePointer?
    var trailing = ""
    let rc = sql.withCString { text -> Int32 in
      var tail: UnsafePointer<CChar>?
      let rc = sqlite3_prepare_v3(
        handle, text, -1, UInt32(SQLITE_PREPARE_PERSISTENT), &statement, &tail)
      if let tail { trailing = String(cString: tail) }
      return rc
    }
    guard rc == SQLITE_OK else {
      throw Self.error(code: sqlite3_extended_errcode(handle), message: lastMessage(), sql: sql)
    }
    guard let statement else { throw StorageError.misuse("empty statement `\(sql)`") }
    guard trailing.allSatisfy({ $0.isWhitespace || $0 == ";" }) else {
      sqlite3_finalize(statement)
      throw StorageError.misuse("`\(sql)` holds several statements; use executeScript")
    }
    if statements.count >= Self.statementCacheLimit {
      for cached in statements.values { sqlite3_finalize(cached) }
      statements = [:]
      columnsByStatement = [:]
    }
    statements[sql] = statement
    prepareCount += 1
    return statement
  }

  private func bind(_ value: SQLValue, at index: Int32, in statement: OpaquePointer, _ sql: String) throws {
    let rc: Int32
    switch value {
    case .null: rc = sqlite3_bind_null(statement, index)
    case .integer(let number): rc = sqlite3_bind_int64(statement, index, number)
    case .real(let number): rc = sqlite3_bind_double(statement, index, number)
    case .text(let text):
      let bytes = Array(text.utf8)
      rc = bytes.withUnsafeBufferPointer { buffer in
        // A nil pointer would bind NULL, so an empty string points at a static "".
        guard let base = buffer.baseAddress, !buffer.isEmpty else {
          return sqlite3_bind_text(statement, index, "", 0, grocer_sqlite_transient())
        }
        return base.withMemoryRebound(to: CChar.self, capacity: buffer.count) {
          sqlite3_bind_text(statement, index, $0, Int32(buffer.count), grocer_sqlite_transient())
        }
      }
    case .blob(let bytes):
      if bytes.isEmpty {
        rc = sqlite3_bind_zeroblob(statement, index, 0)
      } else {
        rc = bytes.withUnsafeBytes { buffer in
          sqlite3_bind_blob(
            statement, index, buffer.baseAddress, Int32(buffer.count), grocer_sqlite_transient())
        }
      }
    }
    guard rc == SQLITE_OK else {
      throw Self.error(code: rc, message: lastMessage(), sql: sql)
    }
  }

  /// Steps once: true when a row is ready, false when the statement is done.
  private func step(_ statement: OpaquePointer, _ sql: String) throws -> Bool {
    switch sqlite3_step(statement) {
    case SQLITE_ROW: return true
    case SQLITE_DONE: return false
    default:
      let handle = try open()
      throw Self.error(code: sqlite3_extended_errcode(handle), message: lastMessage(), sql: sql)
    }
  }

  private func column(_ statement: OpaquePointer, _ index: Int32) -> SQLValue {
    switch sqlite3_column_type(statement, index) {
    case SQLITE_INTEGER: return .integer(sqlite3_column_int64(statement, index))
    case SQLITE_FLOAT: return .real(sqlite3_column_double(statement, index))
    case SQLITE_TEXT:
      guard let text = sqlite3_column_text(statement, index) else { return .text("") }
      let count = Int(sqlite3_column_bytes(statement, index))
      return .text(String(decoding: UnsafeBufferPointer(start: text, count: count), as: UTF8.self))
    case SQLITE_BLOB:
      guard let blob = sqlite3_column_blob(statement, index) else { return .blob([]) }
      let count = Int(sqlite3_column_bytes(statement, index))
      return .blob(Array(UnsafeRawBufferPointer(start: blob, count: count)))
    default: return .null
    }
  }

  private func lastMessage() -> String {
    guard let handle else { return "database is closed" }
    return String(cString: sqlite3_errmsg(handle))
  }

  static func error(code: Int32, message: String, sql: String?) -> StorageError {
    switch code & 0xff {
    case SQLITE_CONSTRAINT: .constraint(code: code, message: message)
    case SQLITE_BUSY, SQLITE_LOCKED: .busy(code: code, message: message)
    default: .engine(code: code, message: message, sql: sql)
    }
  }
}

extension SQLiteConnection {
  /// The raw handle, for connection setup inside this module only.
  func rawHandle() throws(StorageError) -> OpaquePointer {
    try open()
  }
}
