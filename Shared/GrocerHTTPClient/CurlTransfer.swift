import CCurl

/// One request on its way through libcurl: its easy handle and what is collected for the answer.
///
/// Created, driven and finished on the client's thread only; libcurl's write and header
/// callbacks run inside `curl_multi_perform` on that thread too, so nothing here is locked.
final class CurlTransfer {
  let id: UInt64
  let handle: UnsafeMutableRawPointer
  private var continuation: CheckedContinuation<HTTPClientResponse, any Error>?
  private var headerList: UnsafeMutablePointer<curl_slist>?
  private let errorBuffer: UnsafeMutablePointer<CChar>
  fileprivate var headers: [(name: String, value: String)] = []
  fileprivate var body: [UInt8] = []

  /// Builds the easy handle; throws (without resuming `submission`'s continuation) if libcurl
  /// refuses an option.
  init(
    submission: CurlMultiLoop.Submission, configuration: HTTP2ClientConfiguration, timeout: Duration
  ) throws(HTTPClientError) {
    guard let handle = curl_easy_init() else {
      throw HTTPClientError(kind: .invalidRequest, message: "curl_easy_init failed")
    }
    self.id = submission.id
    self.handle = handle
    self.continuation = submission.continuation
    self.errorBuffer = .allocate(capacity: Int(GROCER_CURL_ERROR_SIZE) + 1)
    errorBuffer.initialize(repeating: 0, count: Int(GROCER_CURL_ERROR_SIZE) + 1)
    do {
      try configure(submission.request, configuration, timeout: timeout)
    } catch {
      release()
      throw error
    }
  }

  deinit {
    errorBuffer.deallocate()
  }

  private func configure(
    _ request: HTTPClientRequest, _ configuration: HTTP2ClientConfiguration, timeout: Duration
  ) throws(HTTPClientError) {
    let context = Unmanaged.passUnretained(self).toOpaque()
    try set(CURLOPT_URL, Self.url(base: configuration.baseURL, path: request.path))
    try set(CURLOPT_NOSIGNAL, 1)
    try set(CURLOPT_ERRORBUFFER, pointer: UnsafeMutableRawPointer(errorBuffer))
    try check(grocer_curl_easy_setopt_write_callback(handle, CURLOPT_WRITEFUNCTION, curlWriteBody))
    try set(CURLOPT_WRITEDATA, pointer: context)
    try check(grocer_curl_easy_setopt_write_callback(handle, CURLOPT_HEADERFUNCTION, curlWriteHeader))
    try set(CURLOPT_HEADERDATA, pointer: context)
    switch configuration.versionMode {
    case .http2TLS:
      try set(CURLOPT_HTTP_VERSION, Int(CURL_HTTP_VERSION_2TLS))
      // Wait for the connection being set up to say it multiplexes rather than open another.
      try set(CURLOPT_PIPEWAIT, 1)
    case .http2PriorKnowledge:
      try set(CURLOPT_HTTP_VERSION, Int(CURL_HTTP_VERSION_2_PRIOR_KNOWLEDGE))
      if CurlGlobal.priorKnowledgeReuseIsBroken {
        // libcurl before 8.0 fails a request that reuses an h2c prior-knowledge connection
        // ("Error in the HTTP2 framing layer", curl issue #10634): one connection per request.
        try set(CURLOPT_FRESH_CONNECT, 1)
        try set(CURLOPT_FORBID_REUSE, 1)
      } else {
        try set(CURLOPT_PIPEWAIT, 1)
      }
    }
    try set(CURLOPT_TIMEOUT_MS, max(1, Self.milliseconds(timeout)))
    try set(CURLOPT_CONNECTTIMEOUT_MS, max(1, Self.milliseconds(min(timeout, configuration.connectTimeout))))
    if let caFile = configuration.caFile { try set(CURLOPT_CAINFO, caFile) }
    if configuration.insecure {
      try set(CURLOPT_SSL_VERIFYPEER, 0)
      try set(CURLOPT_SSL_VERIFYHOST, 0)
    }
    try setMethodAndBody(request)
    try setHeaders(request.headers)
  }

  private func setMethodAndBody(_ request: HTTPClientRequest) throws(HTTPClientError) {
    let method = request.method.uppercased()
    switch method {
    case "GET" where request.body.isEmpty:
      try set(CURLOPT_HTTPGET, 1)
    case "HEAD":
      try set(CURLOPT_NOBODY, 1)
    default:
      if !request.body.isEmpty || method == "POST" || method == "PUT" || method == "PATCH" {
        try check(
          grocer_curl_easy_setopt_off_t(handle, CURLOPT_POSTFIELDSIZE_LARGE, curl_off_t(request.body.count)))
        // COPYPOSTFIELDS: libcurl keeps its own copy, so the bytes need not outlive this call.
        if request.body.isEmpty {
          try set(CURLOPT_COPYPOSTFIELDS, "")
        } else {
          let code = request.body.withUnsafeBytes { bytes in
            grocer_curl_easy_setopt_pointer(
              handle, CURLOPT_COPYPOSTFIELDS, UnsafeMutableRawPointer(mutating: bytes.baseAddress))
          }
          try check(code)
        }
      }
      if method != "POST" { try set(CURLOPT_CUSTOMREQUEST, method) }
    }
  }

  /// The caller's fields in order, and removals of what libcurl would add on its own
  /// (`Expect: 100-continue`, a form `Content-Type`) unless the caller set them.
  private func setHeaders(_ fields: [(String, String)]) throws(HTTPClientError) {
    var lines: [String] = []
    var named = Set<String>()
    for (name, value) in fields {
      named.insert(name.lowercased())
      // "name;" is libcurl's way to send a field with an empty value.
      lines.append(value.isEmpty ? "\(name);" : "\(name): \(value)")
    }
    if !named.contains("expect") { lines.append("Expect:") }
    if !named.contains("content-type") { lines.append("Content-Type:") }
    for line in lines {
      guard let appended = curl_slist_append(headerList, line) else {
        throw HTTPClientError(kind: .invalidRequest, message: "curl_slist_append failed")
      }
      headerList = appended
    }
    try check(grocer_curl_easy_setopt_slist(handle, CURLOPT_HTTPHEADER, headerList))
  }

  /// New connections libcurl made for this transfer (0 when it reused one).
  var connectsMade: Int {
    var connects = 0
    grocer_curl_easy_getinfo_long(handle, CURLINFO_NUM_CONNECTS, &connects)
    return connects
  }

  /// Resumes the caller with the response (or error) for `code`, then frees the handle. The
  /// handle must already be removed from the multi handle.
  func finish(_ code: CURLcode) {
    if code == CURLE_OK {
      var status = 0
      var version = 0
      grocer_curl_easy_getinfo_long(handle, CURLINFO_RESPONSE_CODE, &status)
      grocer_curl_easy_getinfo_long(handle, CURLINFO_HTTP_VERSION, &version)
      let response = HTTPClientResponse(
        status: status, headers: headers, body: body, version: Self.version(version))
      continuation?.resume(returning: response)
    } else {
      continuation?.resume(throwing: Self.error(code, detail: String(cString: errorBuffer)))
    }
    continuation = nil
    release()
  }

  /// Fails the caller with `error` and frees the handle (already removed from the multi).
  func fail(_ error: any Error) {
    continuation?.resume(throwing: error)
    continuation = nil
    release()
  }

  private func release() {
    curl_easy_cleanup(handle)
    curl_slist_free_all(headerList)
    headerList = nil
  }

  // MARK: - Helpers

  private func set(_ option: CURLoption, _ value: Int) throws(HTTPClientError) {
    try check(grocer_curl_easy_setopt_long(handle, option, value))
  }

  private func set(_ option: CURLoption, _ value: String) throws(HTTPClientError) {
    try check(value.withCString { grocer_curl_easy_setopt_string(handle, option, $0) })
  }

  private func set(_ option: CURLoption, pointer: UnsafeMutableRawPointer) throws(HTTPClientError) {
    try check(grocer_curl_easy_setopt_pointer(handle, option, pointer))
  }

  private func check(_ code: CURLcode) throws(HTTPClientError) {
    guard code == CURLE_OK else {
      throw HTTPClientError(
        kind: .invalidRequest, curlCode: Int(code.rawValue),
        message: String(cString: curl_easy_strerror(code)))
    }
  }

  static func url(base: String, path: String) -> String {
    let trimmed = base.hasSuffix("/") ? String(base.dropLast()) : base
    return path.hasPrefix("/") ? trimmed + path : trimmed + "/" + path
  }

  static func milliseconds(_ duration: Duration) -> Int {
    let (seconds, attoseconds) = duration.components
    return Int(seconds) * 1000 + Int(attoseconds / 1_000_000_000_000_000)
  }

  static func version(_ value: Int) -> HTTPClientVersion {
    switch value {
    case Int(CURL_HTTP_VERSION_1_0): .http1_0
    case Int(CURL_HTTP_VERSION_1_1): .http1_1
    case Int(CURL_HTTP_VERSION_2_0): .http2
    case Int(CURL_HTTP_VERSION_3): .http3
    default: .unknown
    }
  }

  /// Sorts libcurl's result codes into what a caller decides on (retry or not).
  static func error(_ code: CURLcode, detail: String) -> HTTPClientError {
    let kind: HTTPClientError.Kind
    switch code {
    case CURLE_OPERATION_TIMEDOUT:
      kind = .timedOut
    case CURLE_COULDNT_CONNECT, CURLE_COULDNT_RESOLVE_HOST, CURLE_COULDNT_RESOLVE_PROXY,
      CURLE_SSL_CONNECT_ERROR, CURLE_PEER_FAILED_VERIFICATION, CURLE_SSL_CACERT_BADFILE,
      CURLE_SSL_CERTPROBLEM:
      kind = .connectFailed
    case CURLE_URL_MALFORMAT, CURLE_UNSUPPORTED_PROTOCOL, CURLE_BAD_FUNCTION_ARGUMENT:
      kind = .invalidRequest
    default:
      kind = .transferFailed
    }
    let message = detail.isEmpty ? String(cString: curl_easy_strerror(code)) : detail
    return HTTPClientError(kind: kind, curlCode: Int(code.rawValue), message: message)
  }
}

/// CURLOPT_WRITEFUNCTION: appends a piece of the response body to the transfer.
private func curlWriteBody(
  _ data: UnsafeMutablePointer<CChar>?, _ size: Int, _ count: Int, _ context: UnsafeMutableRawPointer?
) -> Int {
  let length = size * count
  guard let data, let context, length > 0 else { return length }
  let transfer = Unmanaged<CurlTransfer>.fromOpaque(context).takeUnretainedValue()
  transfer.body.append(contentsOf: UnsafeRawBufferPointer(start: data, count: length))
  return length
}

/// CURLOPT_HEADERFUNCTION: called once per header line, the status line and the blank line
/// included. A status line starts the fields over (an interim 1xx response came before).
private func curlWriteHeader(
  _ data: UnsafeMutablePointer<CChar>?, _ size: Int, _ count: Int, _ context: UnsafeMutableRawPointer?
) -> Int {
  let length = size * count
  guard let data, let context, length > 0 else { return length }
  let transfer = Unmanaged<CurlTransfer>.fromOpaque(context).takeUnretainedValue()
  let line = UnsafeRawBufferPointer(start: data, count: length)
  if line.starts(with: "HTTP/".utf8) {
    transfer.headers.removeAll(keepingCapacity: true)
    return length
  }
  guard let colon = line.firstIndex(of: UInt8(ascii: ":")) else { return length }
  let name = String(decoding: line[..<colon], as: UTF8.self).lowercased()
  var valueBytes = line[(colon + 1)...]
  while let first = valueBytes.first, first == 0x20 || first == 0x09 { valueBytes = valueBytes.dropFirst() }
  while let last = valueBytes.last, last == 0x20 || last == 0x09 || last == 0x0D || last == 0x0A {
    valueBytes = valueBytes.dropLast()
  }
  transfer.headers.append((name: name, value: String(decoding: valueBytes, as: UTF8.self)))
  return length
}
