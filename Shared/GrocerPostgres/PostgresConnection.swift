import CPostgres
import Foundation
import GrocerStorage

/// One libpq connection, handed to the closure of `PostgresDatabase.write` or `read`.
///
/// Not `Sendable` and only valid inside that closure. Every statement goes through the
/// extended-query protocol: prepared once per SQL text on this connection (its `?`s numbered
/// `$1…`), then executed with its values as parameters, never spliced into the text. Values go
/// as text (bytes as binary) and the server reads them as the types the statement needs.
public final class PostgresConnection: SQLConnection {
  /// Above this many prepared statements the cache is emptied (`DEALLOCATE ALL`), as SQLite's is.
  static let statementCacheLimit = 256

  private var handle: OpaquePointer?
  private var statements: [String: [Prepared]] = [:]
  private var preparedTotal = 0
  private var columnsByName: [String: SQLRow.Columns] = [:]
  private var lastChanges = 0
  /// How many times SQL text was prepared (a cache miss); tests use it to see reuse.
  private(set) var prepareCount = 0

  private struct Prepared {
    var name: String
    var parameters: Int
    /// The declared parameter types (0: the server's choice).
    var types: [Oid]

    func fits(_ given: [Oid]) -> Bool {
      zip(types, given).allSatisfy { declared, value in value == 0 || declared == value }
    }
  }

  init(url: String) throws(StorageError) {
    let connection = PQconnectdb(url)
    guard let connection, PQstatus(connection) == CONNECTION_OK else {
      let message = connection.map { Self.message(of: $0) } ?? "out of memory"
      PQfinish(connection)
      throw .open(path: Self.redacted(url), message: message)
    }
    handle = connection
    // libpq prints the server's notices on stderr; the ones below a warning (an `IF NOT EXISTS`
    // that skipped) are not worth a line in a service's log.
    PQclear(PQexec(connection, "SET client_min_messages = warning"))
  }

  deinit { close() }

  /// Closes the connection. Idempotent.
  func close() {
    if let handle { PQfinish(handle) }
    handle = nil
    statements = [:]
    preparedTotal = 0
  }

  /// Whether the server side went away (the pool replaces such a connection).
  var isBroken: Bool {
    guard let handle else { return true }
    return PQstatus(handle) != CONNECTION_OK
  }

  /// Whether a transaction is open (also after a failed statement aborted it).
  var inTransaction: Bool {
    guard let handle else { return false }
    let status = PQtransactionStatus(handle)
    return status == PQTRANS_INTRANS || status == PQTRANS_INERROR
  }

  public var changes: Int { lastChanges }

  public func execute(_ sql: String, bindings: [any SQLBindable]) throws {
    try run(sql, bindings) { _ in () }
  }

  public func query(_ sql: String, bindings: [any SQLBindable]) throws -> [SQLRow] {
    try run(sql, bindings) { result in
      let columns = columns(of: result, sql)
      let rows = Int(PQntuples(result))
      let width = Int32(columns.names.count)
      return (0..<rows).map { row in
        SQLRow(columns: columns, values: (0..<width).map { Self.value(result, Int32(row), $0) })
      }
    }
  }

  public func queryOne(_ sql: String, bindings: [any SQLBindable]) throws -> SQLRow? {
    try run(sql, bindings) { result in
      guard PQntuples(result) > 0 else { return nil }
      let columns = columns(of: result, sql)
      return SQLRow(
        columns: columns, values: (0..<Int32(columns.names.count)).map { Self.value(result, 0, $0) })
    }
  }

  /// Runs several `;`-separated statements through the simple-query protocol (schema scripts).
  public func executeScript(_ sql: String) throws {
    let handle = try open()
    let result = PQexec(handle, sql)
    defer { PQclear(result) }
    try check(result, sql)
  }

  /// Waits up to `timeoutMilliseconds` for notifications of a channel this connection LISTENs
  /// to; returns how many arrived (0 on a timeout). Throws when the connection broke.
  func awaitNotifications(timeoutMilliseconds: Int32) throws -> Int {
    let handle = try open()
    var descriptor = pollfd(fd: PQsocket(handle), events: Int16(POLLIN), revents: 0)
    guard descriptor.fd >= 0 else { throw StorageError.closed }
    _ = poll(&descriptor, 1, timeoutMilliseconds)
    guard PQconsumeInput(handle) == 1 else {
      throw StorageError.unavailable(message: Self.message(of: handle))
    }
    var count = 0
    while let notification = PQnotifies(handle) {
      PQfreemem(notification)
      count += 1
    }
    return count
  }

  // MARK: - Internals

  private func open() throws(StorageError) -> OpaquePointer {
    guard let handle else { throw .closed }
    return handle
  }

  private func run<R>(_ sql: String, _ bindings: [any SQLBindable], _ body: (OpaquePointer) throws -> R)
    throws
    -> R
  {
    let handle = try open()
    let values = bindings.map(\.sqlValue)
    let statement = try prepared(sql, types: values.map(Self.type), handle)
    guard statement.parameters == bindings.count else {
      throw StorageError.misuse("`\(sql)` takes \(statement.parameters) bindings, got \(bindings.count)")
    }
    let result = try Self.withParameters(values) { pointers, lengths, formats in
      PQexecPrepared(handle, statement.name, Int32(values.count), pointers, lengths, formats, 0)
    }
    defer { PQclear(result) }
    try check(result, sql)
    guard let result else { throw StorageError.engine(code: 0, message: "no result", sql: sql) }
    lastChanges = Int(String(cString: PQcmdTuples(result))) ?? 0
    return try body(result)
  }

  /// A statement prepared for `sql` whose declared types fit `types`: a NULL or text value
  /// fits any declaration, a number or bytes only their own. One SQL text bound with an integer
  /// once and a real number later is two prepared statements; one prepared while a value was
  /// NULL is prepared again, fully typed, once that value is not (which then serves both).
  private func prepared(_ sql: String, types: [Oid], _ handle: OpaquePointer) throws -> Prepared {
    if let known = statements[sql]?.first(where: { $0.fits(types) }) { return known }
    if preparedTotal >= Self.statementCacheLimit {
      PQclear(PQexec(handle, "DEALLOCATE ALL"))
      statements = [:]
      columnsByName = [:]
      preparedTotal = 0
    }
    let (text, count) = Placeholders.numbered(sql)
    let name = "g\(prepareCount)"
    // Types are only given for as many parameters as the text has (a wrong count is refused
    // in `run`, with SQLite's message).
    let given = Array(types.prefix(count))
    let result = given.withUnsafeBufferPointer {
      PQprepare(handle, name, text, Int32(given.count), $0.baseAddress)
    }
    defer { PQclear(result) }
    try check(result, sql)
    let statement = Prepared(name: name, parameters: count, types: given)
    statements[sql, default: []].insert(statement, at: 0)
    preparedTotal += 1
    prepareCount += 1
    return statement
  }

  private func columns(of result: OpaquePointer, _ sql: String) -> SQLRow.Columns {
    if let known = columnsByName[sql] { return known }
    let columns = SQLRow.Columns(
      names: (0..<PQnfields(result)).map { String(cString: PQfname(result, $0)) })
    columnsByName[sql] = columns
    return columns
  }

  private func check(_ result: OpaquePointer?, _ sql: String?) throws {
    let status = result.map { PQresultStatus($0) } ?? PGRES_FATAL_ERROR
    guard status != PGRES_COMMAND_OK && status != PGRES_TUPLES_OK && status != PGRES_EMPTY_QUERY else {
      return
    }
    let state =
      result.flatMap { PQresultErrorField($0, Int32(UInt8(ascii: "C"))) }.map { String(cString: $0) } ?? ""
    let text =
      result.flatMap { PQresultErrorMessage($0) }.map { String(cString: $0) }.flatMap {
        $0.isEmpty ? nil : $0
      }
      ?? handle.map { Self.message(of: $0) } ?? "connection closed"
    let message = text.trimmingCharacters(in: .whitespacesAndNewlines)
    // A connection that broke under the statement (the server restarted) has no SQLSTATE.
    if state.isEmpty && isBroken { throw StorageError.unavailable(message: message) }
    throw Self.error(sqlState: state, message: message, sql: sql)
  }

  /// SQLSTATE class 23 is a constraint violation; 40001 (serialization failure) and 40P01
  /// (deadlock) are the conflicts a transaction retries; class 08 (connection exception),
  /// 57P01–57P03 (the server shutting down or starting up) and 53300 (too many connections) say
  /// the server is unavailable for now. The numeric code is the SQLSTATE read as a number where
  /// it is one (23505 for a unique violation), the SQLSTATE also leads the message.
  static func error(sqlState: String, message: String, sql: String?) -> StorageError {
    let code = Int32(sqlState) ?? 0
    let text = sqlState.isEmpty ? message : "\(sqlState) \(message)"
    if sqlState.hasPrefix("23") { return .constraint(code: code, message: text) }
    if sqlState == "40001" || sqlState == "40P01" { return .busy(code: code, message: text) }
    if sqlState.hasPrefix("08") || ["57P01", "57P02", "57P03", "53300"].contains(sqlState) {
      return .unavailable(message: text)
    }
    return .engine(code: code, message: text, sql: sql)
  }

  private static func message(of handle: OpaquePointer) -> String {
    String(cString: PQerrorMessage(handle)).trimmingCharacters(in: .whitespacesAndNewlines)
  }

  /// The URL without its password, for error messages and logs.
  public static func redacted(_ url: String) -> String {
    guard var parts = URLComponents(string: url), parts.password != nil else { return url }
    parts.password = "…"
    return parts.string ?? url
  }

  /// Calls `body` with libpq's parameter arrays: text for numbers and strings, binary for bytes.
  private static func withParameters<R>(
    _ values: [SQLValue],
    _ body: (UnsafePointer<UnsafePointer<CChar>?>?, UnsafePointer<Int32>?, UnsafePointer<Int32>?) -> R
  ) throws -> R {
    var buffers: [[UInt8]?] = []
    var formats: [Int32] = []
    buffers.reserveCapacity(values.count)
    for value in values {
      switch value {
      case .null:
        buffers.append(nil)
        formats.append(0)
      case .integer(let number):
        buffers.append(Array(String(number).utf8) + [0])
        formats.append(0)
      case .real(let number):
        guard number.isFinite else { throw StorageError.misuse("cannot bind \(number)") }
        buffers.append(Array("\(number)".utf8) + [0])
        formats.append(0)
      case .text(let text):
        buffers.append(Array(text.utf8) + [0])
        formats.append(0)
      case .blob(let bytes):
        buffers.append(bytes)
        formats.append(1)
      }
    }
    let lengths = buffers.map { Int32($0?.count ?? 0) }
    // Each buffer is copied into memory that outlives the call (pointers into a Swift array
    // are only valid inside its `withUnsafe…` closure).
    let storage = buffers.map { buffer -> UnsafeMutablePointer<CChar>? in
      guard let buffer else { return nil }
      let memory = UnsafeMutablePointer<CChar>.allocate(capacity: max(1, buffer.count))
      buffer.withUnsafeBufferPointer { source in
        source.withMemoryRebound(to: CChar.self) { memory.update(from: $0.baseAddress!, count: buffer.count) }
      }
      return memory
    }
    defer { for pointer in storage { pointer?.deallocate() } }
    let pointers = storage.map { UnsafePointer($0) }
    return pointers.withUnsafeBufferPointer { pointerBuffer in
      lengths.withUnsafeBufferPointer { lengthBuffer in
        formats.withUnsafeBufferPointer { formatBuffer in
          body(pointerBuffer.baseAddress, lengthBuffer.baseAddress, formatBuffer.baseAddress)
        }
      }
    }
  }

  /// The type a value is declared as when the statement is prepared: 64-bit integers and
  /// doubles as themselves, so `SELECT ?` knows them; text, bytes and NULL are left to the
  /// server, which reads them as whatever the statement needs. Bytes go in binary format, so
  /// into a BYTEA column they are themselves and into a TEXT column their UTF-8 text (stores
  /// bind encoded JSON that way, as SQLite takes it). Declared as bytea they would reach a TEXT
  /// column as the text `\x7b22…`: PostgreSQL converts any type to text on assignment.
  private static func type(_ value: SQLValue) -> Oid {
    switch value {
    case .integer: 20
    case .real: 701
    case .text, .blob, .null: 0
    }
  }

  /// One field of a text-format result as the value SQLite would have given.
  private static func value(_ result: OpaquePointer, _ row: Int32, _ column: Int32) -> SQLValue {
    if PQgetisnull(result, row, column) != 0 { return .null }
    guard let text = PQgetvalue(result, row, column) else { return .null }
    switch PQftype(result, column) {
    case 20, 21, 23, 26:  // int8, int2, int4, oid
      return .integer(strtoll(text, nil, 10))
    case 700, 701, 1700:  // float4, float8, numeric
      return .real(strtod(text, nil))
    case 16:  // bool
      return .integer(text.pointee == CChar(UInt8(ascii: "t")) ? 1 : 0)
    case 17:  // bytea, as `\x` and hex digits
      return .blob(hexBytes(text, count: Int(PQgetlength(result, row, column))))
    default:
      let count = Int(PQgetlength(result, row, column))
      return text.withMemoryRebound(to: UInt8.self, capacity: count) {
        .text(String(decoding: UnsafeBufferPointer(start: $0, count: count), as: UTF8.self))
      }
    }
  }

  private static func hexBytes(_ text: UnsafePointer<CChar>, count: Int) -> [UInt8] {
    func nibble(_ character: CChar) -> UInt8 {
      let byte = UInt8(bitPattern: character)
      switch byte {
      case UInt8(ascii: "0")...UInt8(ascii: "9"): return byte - UInt8(ascii: "0")
      case UInt8(ascii: "a")...UInt8(ascii: "f"): return byte - UInt8(ascii: "a") + 10
      case UInt8(ascii: "A")...UInt8(ascii: "F"): return byte - UInt8(ascii: "A") + 10
      default: return 0
      }
    }
    guard count >= 2 else { return [] }
    var bytes: [UInt8] = []
    bytes.reserveCapacity((count - 2) / 2)
    var index = 2
    while index + 1 < count {
      bytes.append(nibble(text[index]) << 4 | nibble(text[index + 1]))
      index += 2
    }
    return bytes
  }
}
