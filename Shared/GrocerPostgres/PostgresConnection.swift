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
  /// Whether the write now running asked for the commit observers (`takeCommitWake` resets it).
  private var wantsCommitWake = false
  /// The server process serving this connection (what its notifications name as their sender).
  let backendPID: Int32
  /// The BEGIN of the transaction now open, not sent yet: it goes out with the transaction's
  /// first statement in one round trip (libpq's pipeline mode), and not at all when none comes.
  private var pendingBegin: String?
  /// Whether a read's COMMIT went out and its answer is still to be read (at the next use).
  private var commitInFlight = false
  /// Whether the transaction now open is a `writeLockingRows` (its SELECTs lock what they read).
  private var locksRows = false

  private struct Prepared {
    var name: String
    var parameters: Int
    /// The declared parameter types (0: the server's choice).
    var types: [Oid]

    func fits(_ given: [Oid]) -> Bool {
      zip(types, given).allSatisfy { declared, value in value == 0 || declared == value }
    }
  }

  /// A connection of its own, outside any pool and any transaction until one is begun: what the
  /// pool opens, and what administration needs (`CREATE DATABASE` refuses to run in a transaction).
  public init(url: String) throws(StorageError) {
    let connection = Self.connect(url)
    guard let connection, PQstatus(connection) == CONNECTION_OK else {
      let message = connection.map { Self.message(of: $0) } ?? "out of memory"
      PQfinish(connection)
      throw .open(path: Self.redacted(url), message: message)
    }
    handle = connection
    backendPID = PQbackendPID(connection)
    // libpq prints the server's notices on stderr; the ones below a warning (an `IF NOT EXISTS`
    // that skipped) are not worth a line in a service's log.
    PQclear(PQexec(connection, "SET client_min_messages = warning"))
  }

  deinit { close() }

  /// Closes the connection. Idempotent.
  func close() {
    if let handle { PQfinish(handle) }
    handle = nil
    pendingBegin = nil
    commitInFlight = false
    statements = [:]
    preparedTotal = 0
  }

  /// Whether the server side went away (the pool replaces such a connection).
  public var isBroken: Bool {
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

  public func wakeCommitObservers() { wantsCommitWake = true }

  public var lockClause: String { locksRows ? " FOR UPDATE" : "" }
  public var dialect: SQLDialect { .postgresql }

  /// Whether a write since the last call asked for the commit observers.
  func takeCommitWake() -> Bool {
    defer { wantsCommitWake = false }
    return wantsCommitWake
  }

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
    if let begin = pendingBegin {
      pendingBegin = nil
      try exec(begin, handle)
    }
    try exec(sql, handle)
  }

  private func exec(_ sql: String, _ handle: OpaquePointer) throws {
    let result = PQexec(handle, sql)
    defer { PQclear(result) }
    try check(result, sql)
  }

  // MARK: - Transactions

  /// Opens a transaction with `sql` (a BEGIN), sent with the first statement that follows; what
  /// an earlier transaction asked of the commit observers is forgotten. `locksRows` sets
  /// `lockClause` for this transaction.
  func begin(_ sql: String, locksRows: Bool = false) {
    pendingBegin = sql
    wantsCommitWake = false
    self.locksRows = locksRows
  }

  /// Commits the transaction `begin` opened. A write waits for the answer (a conflict shows at
  /// COMMIT, and a write is only done once it is durable); a read does not: its COMMIT cannot
  /// lose anything, and its answer is read at the connection's next use. A transaction that ran
  /// no statement was never sent.
  func commit(awaitingAnswer: Bool, announcingOutboxWrites: Bool = false) throws {
    if pendingBegin != nil {
      pendingBegin = nil
      return
    }
    let handle = try open()
    // Delivered to the listeners when (and only if) the transaction commits.
    if announcingOutboxWrites, wantsCommitWake { try exec("NOTIFY grocer_outbox", handle) }
    guard !awaitingAnswer, PQenterPipelineMode(handle) == 1 else { return try exec("COMMIT", handle) }
    guard PQsendQueryParams(handle, "COMMIT", 0, nil, nil, nil, nil, 0) == 1, PQpipelineSync(handle) == 1
    else {
      throw lost(handle)
    }
    commitInFlight = true
  }

  /// Ends the transaction after an error: nothing to send when it never began, no ROLLBACK when
  /// a failed COMMIT (a serialization failure) has ended it already.
  func rollback() {
    guard pendingBegin == nil else { return pendingBegin = nil }
    if !isBroken, inTransaction, let handle { PQclear(PQexec(handle, "ROLLBACK")) }
  }

  /// Waits up to `timeoutMilliseconds` for notifications of a channel this connection LISTENs
  /// to; returns how many arrived (0 on a timeout) from senders `counts` accepts (by their
  /// server process). Throws when the connection broke.
  func awaitNotifications(timeoutMilliseconds: Int32, counts: (Int32) -> Bool) throws -> Int {
    let handle = try open()
    var descriptor = pollfd(fd: PQsocket(handle), events: Int16(POLLIN), revents: 0)
    guard descriptor.fd >= 0 else { throw StorageError.closed }
    _ = poll(&descriptor, 1, timeoutMilliseconds)
    guard PQconsumeInput(handle) == 1 else {
      throw StorageError.unavailable(message: Self.message(of: handle))
    }
    var count = 0
    while let notification = PQnotifies(handle) {
      if counts(notification.pointee.be_pid) { count += 1 }
      PQfreemem(notification)
    }
    return count
  }

  // MARK: - Internals

  /// Connects to `url` with defaults the URL may override (it is expanded after them): no
  /// GSSAPI encryption. libpq tries that first on every TCP connection when built with Kerberos,
  /// which costs a Kerberos call per connection and aborted a test process whose exit destroyed
  /// Kerberos's mutexes while another thread was connecting.
  private static func connect(_ url: String) -> OpaquePointer? {
    let pairs = [("gssencmode", "disable"), ("dbname", url)]
    let keywords = pairs.map { strdup($0.0) } + [nil]
    let values = pairs.map { strdup($0.1) } + [nil]
    defer { (keywords + values).forEach { free($0) } }
    return keywords.map { UnsafePointer($0) }.withUnsafeBufferPointer { keywordPointers in
      values.map { UnsafePointer($0) }.withUnsafeBufferPointer { valuePointers in
        PQconnectdbParams(keywordPointers.baseAddress, valuePointers.baseAddress, 1)
      }
    }
  }

  /// The handle, once the answer to a read's COMMIT still under way is read.
  private func open() throws(StorageError) -> OpaquePointer {
    guard let handle else { throw .closed }
    guard commitInFlight else { return handle }
    commitInFlight = false
    PQclear(Self.nextResult(handle))
    leavePipeline(handle)
    guard let open = self.handle else { throw .unavailable(message: "connection lost after a read") }
    return open
  }

  /// Sends the pending BEGIN and the statement together and reads both answers: one round trip.
  /// Returns the statement's result (the caller clears it); throws BEGIN's error.
  private func beginThenExecute(
    _ begin: String, _ statement: Prepared, _ values: [SQLValue], _ handle: OpaquePointer
  ) throws -> OpaquePointer? {
    guard PQenterPipelineMode(handle) == 1 else {
      try exec(begin, handle)
      return try Self.executePrepared(statement, values, handle)
    }
    var unbindable: (any Error)?
    if PQsendQueryParams(handle, begin, 0, nil, nil, nil, nil, 0) == 1 {
      do {
        _ = try Self.withParameters(values) { pointers, lengths, formats in
          PQsendQueryPrepared(handle, statement.name, Int32(values.count), pointers, lengths, formats, 0)
        }
      } catch {
        unbindable = error
      }
    }
    // The Sync goes out even when a send failed, so that the server answers what it got.
    guard PQpipelineSync(handle) == 1 else {
      throw lost(handle)
    }
    let began = Self.nextResult(handle)
    let result = Self.nextResult(handle)
    leavePipeline(handle)
    defer { PQclear(began) }
    do {
      try check(began, begin)
      if let unbindable { throw unbindable }
    } catch {
      PQclear(result)
      throw error
    }
    return result
  }

  /// Runs a prepared statement and waits for its result (the caller clears it).
  private static func executePrepared(_ statement: Prepared, _ values: [SQLValue], _ handle: OpaquePointer)
    throws -> OpaquePointer?
  {
    try withParameters(values) { pointers, lengths, formats in
      PQexecPrepared(handle, statement.name, Int32(values.count), pointers, lengths, formats, 0)
    }
  }

  /// Closes a connection whose sending failed (the server went away) and says so.
  private func lost(_ handle: OpaquePointer) -> StorageError {
    let message = Self.message(of: handle)
    close()
    return .unavailable(message: message)
  }

  /// The first result of the next query of a pipeline, the rest of that query's results read
  /// and dropped (up to the NULL that ends them); the Sync's result is returned as it is.
  private static func nextResult(_ handle: OpaquePointer) -> OpaquePointer? {
    guard let first = PQgetResult(handle) else { return nil }
    if PQresultStatus(first) == PGRES_PIPELINE_SYNC { return first }
    while let extra = PQgetResult(handle) { PQclear(extra) }
    return first
  }

  /// Reads what is left of a pipeline (its Sync) and leaves pipeline mode; a connection that
  /// cannot (it broke meanwhile) is closed, so the pool drops it.
  private func leavePipeline(_ handle: OpaquePointer) {
    for _ in 0..<8 {
      if PQexitPipelineMode(handle) == 1 { return }
      if let result = PQgetResult(handle) {
        PQclear(result)
      } else if PQstatus(handle) != CONNECTION_OK {
        break
      }
    }
    close()
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
    let result: OpaquePointer?
    if let begin = pendingBegin {
      pendingBegin = nil
      result = try beginThenExecute(begin, statement, values, handle)
    } else {
      result = try Self.executePrepared(statement, values, handle)
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
