import CMicroHTTPD
import Foundation
import GrocerCore
import GrocerFastPath
import GrocerHTTP
import GrocerRuntime
import Synchronization

/// State of one request between MHD callbacks; MHD owns a retained reference in `*req_cls`
/// from the URI-log callback until the request-completed callback.
///
/// `@unchecked Sendable`: `phase`, `body` and `connection` are touched only by the MHD thread
/// serving the connection (MHD calls one connection's callbacks one at a time); `response` is
/// written under `ServerCore.suspended`'s lock before the connection is resumed.
final class RequestContext: @unchecked Sendable {
  enum Phase { case fresh, readingBody, tooLarge, suspended, answered }

  /// The request target, split at its `?` (still percent-encoded).
  let rawPath: String
  let rawQuery: String
  var phase = Phase.fresh
  var body: [UInt8] = []
  var wentAsync = false
  /// Bytes thrown away after the body went over the limit.
  var discarded = 0
  var response: HTTPResponse?
  var connection: OpaquePointer?
  /// The TCP connection's deadline keeper (nil only if MHD gave no socket context).
  var connectionState: ConnectionState?

  /// A request MHD gave no target for.
  init() {
    rawPath = "/"
    rawQuery = ""
  }

  /// From the target as MHD has it: split where it lies, so no copy of the whole is made.
  init(target: UnsafePointer<CChar>) {
    let length = strlen(target)
    let bytes = UnsafeRawBufferPointer(start: target, count: length)
    if let mark = memchr(target, Int32(UInt8(ascii: "?")), length) {
      let pathLength = UnsafeRawPointer(mark) - UnsafeRawPointer(target)
      rawPath =
        pathLength == 0
        ? "/" : String(decoding: UnsafeRawBufferPointer(rebasing: bytes[..<pathLength]), as: UTF8.self)
      rawQuery = String(decoding: UnsafeRawBufferPointer(rebasing: bytes[(pathLength + 1)...]), as: UTF8.self)
    } else {
      rawPath = length == 0 ? "/" : String(decoding: bytes, as: UTF8.self)
      rawQuery = ""
    }
  }
}

/// One streamed response on its connection, owned by MHD's response (released by its free
/// callback, when MHD is done with the response).
final class StreamContext: @unchecked Sendable {
  let stream: HTTPBodyStream
  /// Touched only by MHD's thread for the connection, and by `wake` after a park.
  let connection: OpaquePointer
  unowned let core: ServerCore

  init(stream: HTTPBodyStream, connection: OpaquePointer, core: ServerCore) {
    self.stream = stream
    self.connection = connection
    self.core = core
  }

  /// MHD asks for more of the body: what is queued, or (nothing yet) a parked connection that
  /// the next write resumes.
  func read(into buffer: UnsafeMutablePointer<CChar>, max: Int) -> Int {
    let result = stream.read(
      into: UnsafeMutableRawBufferPointer(start: buffer, count: max),
      park: { _ = MHD_suspend_connection(connection) },
      wake: { [self] in MHD_resume_connection(self.connection) })
    switch result {
    case .bytes(let count): return count
    case .parked: return 0
    case .end: return -1  // MHD_CONTENT_READER_END_OF_STREAM
    }
  }
}

/// What the C callbacks call into: the responder, the body limit and the suspended requests.
final class ServerCore: Sendable {
  let responder: any HTTPResponder
  let logger: Logger
  let maxBodyBytes: Int
  /// Request deadlines and the connection limit.
  let connections: ConnectionGuard
  /// Connections per daemon, which the acceptor balances.
  let load = DaemonLoad()
  /// Requests suspended until the responder answers. Removing an entry is the right to resume
  /// it, so an answer and a shutdown forcing a 503 never both resume one connection.
  private let suspended = Mutex<[ObjectIdentifier: RequestContext]>([:])
  /// Streamed responses being sent, which shutdown ends.
  private let streams = Mutex<[ObjectIdentifier: HTTPBodyStream]>([:])
  /// Async requests accepted and not yet completed by MHD, which shutdown drains.
  let asyncInFlight = InFlight()
  /// Gives a transport thread's core away now and then (`HTTPServerConfiguration.yieldEvery`).
  private let yielding: TransportYield

  /// How much of a streamed (chunked) body over the limit is read and dropped so the client still
  /// gets its 413; beyond this the connection is closed. A declared `Content-Length` over the
  /// limit is refused before any of the body is read.
  static let maxDiscardedBytes = 1 << 20

  init(
    responder: any HTTPResponder, logger: Logger, maxBodyBytes: Int, connections: ConnectionGuard,
    yieldEvery: Int
  ) {
    self.responder = responder
    self.logger = logger
    self.maxBodyBytes = maxBodyBytes
    self.connections = connections
    self.yielding = TransportYield(every: yieldEvery)
  }

  func handle(
    _ connection: OpaquePointer, _ context: RequestContext, method: UnsafePointer<CChar>?,
    uploadData: UnsafePointer<CChar>?, uploadSize: UnsafeMutablePointer<Int>
  ) -> MHD_Result {
    switch context.phase {
    case .fresh:
      // The first call only announces the headers; answering now would cost keep-alive, so only
      // an oversized declared body is refused here (MHD then closes without reading it).
      context.phase = .readingBody
      if !ThreadStripe.isAssigned {
        // This MHD thread's first request: its own stripe, so no other transport thread shares it.
        ThreadStripe.adopt(load.index(of: grocer_mhd_connection_daemon(connection)) ?? 0)
      }
      if let method, !Self.isToken(method) {
        context.phase = .answered
        connections.requestRead(context.connectionState)
        return queue(
          Self.closing(HTTPError.badRequest(code: "badMethod", detail: "the method is not a token")),
          on: connection)
      }
      let declared = MHD_lookup_connection_value(connection, .HEADER_KIND, "Content-Length")
      if let ambiguous = Self.ambiguousFraming(connection, declaredLength: declared) {
        context.phase = .answered
        connections.requestRead(context.connectionState)
        return queue(ambiguous, on: connection)
      }
      if let tooLarge = BodyLimit.check(
        declaredLength: declared.map { String(cString: $0) }, received: 0, limit: maxBodyBytes)
      {
        context.phase = .answered
        connections.requestRead(context.connectionState)
        return queue(tooLarge, on: connection)
      }
      return .YES
    case .readingBody:
      let size = uploadSize.pointee
      if size > 0 {
        uploadSize.pointee = 0
        if context.body.count + size > maxBodyBytes {
          // MHD cannot queue a response in the middle of a body: drop the rest and answer 413
          // when it ends, or close the connection if the client keeps streaming.
          context.phase = .tooLarge
          context.discarded = size
          context.body = []
          return .YES
        }
        if let uploadData {
          context.body.append(contentsOf: UnsafeRawBufferPointer(start: uploadData, count: size))
        }
        return .YES
      }
      connections.requestRead(context.connectionState)
      var request = HTTPRequest(
        method: method.map(Self.methodName) ?? "GET", rawPath: context.rawPath, rawQuery: context.rawQuery,
        headers: readHeaders(connection), body: context.body)
      context.body = []
      if let response = responder.respondImmediately(to: &request) {
        context.phase = .answered
        return queue(response, on: connection)
      }
      suspendAndRespond(to: request, context, connection)
      return .YES
    case .tooLarge:
      let size = uploadSize.pointee
      if size > 0 {
        uploadSize.pointee = 0
        context.discarded += size
        return context.discarded > Self.maxDiscardedBytes ? .NO : .YES
      }
      context.phase = .answered
      connections.requestRead(context.connectionState)
      return queue(HTTPError.payloadTooLarge(limit: maxBodyBytes).response, on: connection)
    case .suspended:
      // Called again after a resume: the answer is waiting.
      let response = suspended.withLock { _ in context.response } ?? HTTPError.internalServerError.response
      context.phase = .answered
      context.response = nil
      return queue(response, on: connection)
    case .answered:
      uploadSize.pointee = 0
      return .YES
    }
  }

  private func suspendAndRespond(
    to request: HTTPRequest, _ context: RequestContext, _ connection: OpaquePointer
  ) {
    context.phase = .suspended
    context.wentAsync = true
    context.connection = connection
    asyncInFlight.enter()
    suspended.withLock { $0[ObjectIdentifier(context)] = context }
    MHD_suspend_connection(connection)
    responder.respond(to: request) { response in self.resume(context, with: response) }
  }

  /// Resumes `context` with `response` unless someone (shutdown) already did.
  private func resume(_ context: RequestContext, with response: HTTPResponse) {
    let connection = suspended.withLock { entries -> OpaquePointer? in
      guard entries.removeValue(forKey: ObjectIdentifier(context)) != nil else { return nil }
      context.response = response
      return context.connection
    }
    // Outside the lock (MHD takes its own and wakes the poll thread): the entry is gone, so no
    // one else resumes this connection, and until it completes it counts as in flight, which
    // shutdown waits for before stopping the daemon.
    if let connection { MHD_resume_connection(connection) }
  }

  /// Answers every suspended request with 503 and resumes it; returns how many there were.
  func resumeAllSuspended() -> Int {
    suspended.withLock { entries in
      let count = entries.count
      for context in entries.values {
        context.response =
          HTTPError.serviceUnavailable(retryAfter: 1, detail: "the server is shutting down")
          .response
        if let connection = context.connection { MHD_resume_connection(connection) }
      }
      entries.removeAll()
      return count
    }
  }

  /// An MHD response reading `stream`; the stream is registered until MHD frees the response.
  private func streamResponse(_ stream: HTTPBodyStream, on connection: OpaquePointer) -> OpaquePointer? {
    let context = StreamContext(stream: stream, connection: connection, core: self)
    let raw = Unmanaged.passRetained(context).toOpaque()
    guard
      let response = MHD_create_response_from_callback(
        UInt64.max, 4096, grocerStreamRead, raw, grocerStreamFree)
    else {
      Unmanaged<StreamContext>.fromOpaque(raw).release()
      return nil
    }
    streams.withLock { $0[ObjectIdentifier(stream)] = stream }
    return response
  }

  /// MHD is done with a streamed response: the stream ends (its producer is told) and is
  /// forgotten.
  func streamEnded(_ context: StreamContext) {
    streams.withLock { _ = $0.removeValue(forKey: ObjectIdentifier(context.stream)) }
    context.stream.cancel()
  }

  /// Ends every stream being sent (shutdown) and waits, bounded, until MHD let them go: a
  /// parked connection would make stopping the daemon abort.
  func endAllStreams(within limit: Duration) async -> Int {
    let open = streams.withLock { Array($0.values) }
    for stream in open { stream.cancel() }
    let deadline = ContinuousClock.now + limit
    while streams.withLock({ !$0.isEmpty }), ContinuousClock.now < deadline {
      try? await Task.sleep(for: .milliseconds(10))
    }
    return open.count
  }

  func completed(_ context: RequestContext) {
    if context.wentAsync { asyncInFlight.leave() }
    connections.awaitNextRequest(context.connectionState)
  }

  /// A 400 for a body whose length cannot be told for sure: several `Content-Length` fields,
  /// `Content-Length` with `Transfer-Encoding`, or a transfer coding other than `chunked`. MHD
  /// accepts the first two (it takes the first length, or the chunked coding) while a proxy in
  /// front may frame the body the other way (request smuggling), and waits forever on the third:
  /// RFC 9112 §6.3 says to answer all three with 400 and close the connection.
  static func ambiguousFraming(_ connection: OpaquePointer, declaredLength: UnsafePointer<CChar>?)
    -> HTTPResponse?
  {
    if let coding = MHD_lookup_connection_value(connection, .HEADER_KIND, "Transfer-Encoding") {
      if declaredLength != nil {
        return closing(
          .badRequest(
            code: "ambiguousLength", detail: "Content-Length and Transfer-Encoding must not both be sent"))
      }
      if strcasecmp(coding, "chunked") != 0 {
        return closing(
          .badRequest(
            code: "unsupportedTransferCoding", detail: "only the chunked transfer coding is supported"))
      }
      return nil
    }
    guard declaredLength != nil else { return nil }
    var count = 0
    _ = MHD_get_connection_values_n(connection, .HEADER_KIND, grocerContentLengthCounter, &count)
    guard count > 1 else { return nil }
    return closing(.badRequest(code: "ambiguousLength", detail: "Content-Length must be sent once"))
  }

  /// `error` as a response that closes the connection: what follows a broken request on the same
  /// connection cannot be trusted to start where MHD thinks it does.
  static func closing(_ error: HTTPError) -> HTTPResponse {
    var response = error.response
    response.headers.set("Connection", "close")
    return response
  }

  /// True if `method` is an RFC 9110 token (MHD passes any bytes up to the first space, control
  /// characters included, and the router would answer them with a 405).
  static func isToken(_ method: UnsafePointer<CChar>) -> Bool {
    var pointer = method
    if pointer.pointee == 0 { return false }
    while pointer.pointee != 0 {
      switch UInt8(bitPattern: pointer.pointee) {
      case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
        UInt8(ascii: "0")...UInt8(ascii: "9"):
        break
      case UInt8(ascii: "!"), UInt8(ascii: "#"), UInt8(ascii: "$"), UInt8(ascii: "%"), UInt8(ascii: "&"),
        UInt8(ascii: "'"), UInt8(ascii: "*"), UInt8(ascii: "+"), UInt8(ascii: "-"), UInt8(ascii: "."),
        UInt8(ascii: "^"), UInt8(ascii: "_"), UInt8(ascii: "`"), UInt8(ascii: "|"), UInt8(ascii: "~"):
        break
      default:
        return false
      }
      pointer += 1
    }
    return true
  }

  /// The method as a `String`: the common ones as constants (no allocation, no UTF-8 check).
  /// Literals, compared one by one: a `String` from an array handed to C is copied first.
  static func methodName(_ method: UnsafePointer<CChar>) -> String {
    if strcmp(method, "GET") == 0 { return "GET" }
    if strcmp(method, "POST") == 0 { return "POST" }
    if strcmp(method, "PUT") == 0 { return "PUT" }
    if strcmp(method, "PATCH") == 0 { return "PATCH" }
    if strcmp(method, "DELETE") == 0 { return "DELETE" }
    if strcmp(method, "HEAD") == 0 { return "HEAD" }
    return String(cString: method)
  }

  /// `text` as a NUL-terminated C string on the stack. Handing a short (inline) `String` to C
  /// directly makes a heap copy first, and every response has a few such header fields.
  static func withCString<Result>(_ text: String, _ body: (UnsafePointer<CChar>) -> Result) -> Result {
    var text = text
    return text.withUTF8 { bytes in
      withUnsafeTemporaryAllocation(of: CChar.self, capacity: bytes.count + 1) { buffer in
        if let source = bytes.baseAddress { memcpy(buffer.baseAddress!, source, bytes.count) }
        buffer[bytes.count] = 0
        return body(buffer.baseAddress!)
      }
    }
  }

  private func readHeaders(_ connection: OpaquePointer) -> HTTPHeaders {
    // Room for what clients commonly send, so the storage is allocated once.
    var headers = HTTPHeaders(minimumCapacity: 8)
    withUnsafeMutablePointer(to: &headers) { pointer in
      _ = MHD_get_connection_values_n(connection, .HEADER_KIND, grocerHeaderIterator, pointer)
    }
    return headers
  }

  private func queue(_ response: HTTPResponse, on connection: OpaquePointer) -> MHD_Result {
    let created: OpaquePointer?
    if let stream = response.stream {
      created = streamResponse(stream, on: connection)
    } else {
      created = response.body.withUnsafeBytes { buffer in
        MHD_create_response_from_buffer(
          buffer.count, UnsafeMutableRawPointer(mutating: buffer.baseAddress), .RESPMEM_MUST_COPY)
      }
    }
    guard let created else { return .NO }
    // The daemons run with MHD_USE_SUPPRESS_DATE_NO_CLOCK: MHD's own Date comes from gmtime_r,
    // whose process-wide lock its threads fought over (see Timestamp.writeHTTPDate).
    withUnsafeTemporaryAllocation(byteCount: Timestamp.httpDateLength + 1, alignment: 1) { buffer in
      Timestamp.writeHTTPDate(time(nil), into: buffer)
      buffer[Timestamp.httpDateLength] = 0
      _ = MHD_add_response_header(created, "Date", buffer.baseAddress!.assumingMemoryBound(to: CChar.self))
    }
    for field in response.headers.pairs {
      _ = Self.withCString(field.name) { name in
        Self.withCString(field.value) { value in MHD_add_response_header(created, name, value) }
      }
    }
    let result = MHD_queue_response(connection, UInt32(clamping: response.status), created)
    MHD_destroy_response(created)
    yielding.responded()
    return result
  }
}
