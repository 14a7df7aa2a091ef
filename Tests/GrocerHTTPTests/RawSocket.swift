import Foundation

/// A raw TCP client for the abuse tests: connects with a bounded wait, sends arbitrary bytes
/// (NUL bytes, half requests, garbage) and tells a reply apart from a close and from silence.
///
/// Not thread-safe: one thread drives one socket (the slowloris driver drives many, in turn).
final class RawSocket: @unchecked Sendable {
  /// What came back for a request.
  enum Outcome: Equatable, CustomStringConvertible {
    /// A status line and headers (and the `Content-Length` body) were read.
    case response(status: Int, headers: [String: String], body: String)
    /// The server closed (EOF or reset) before a complete response.
    case closed
    /// Nothing complete arrived within the receive timeout.
    case silent

    var status: Int? {
      if case .response(let status, _, _) = self { return status }
      return nil
    }

    var body: String? {
      if case .response(_, _, let body) = self { return body }
      return nil
    }

    var description: String {
      switch self {
      case .response(let status, _, let body): "\(status) \(body.prefix(80))"
      case .closed: "closed"
      case .silent: "silent"
      }
    }
  }

  let fd: Int32
  private var buffer: [UInt8] = []

  /// `connect` with a `sockaddr_in` or `sockaddr_in6`.
  private static func connect<Address>(_ fd: Int32, to address: Address) -> Int32 {
    withUnsafePointer(to: address) {
      $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
        Glibc.connect(fd, $0, socklen_t(MemoryLayout<Address>.size))
      }
    }
  }

  /// Connects to 127.0.0.1:`port` (or `::1` with `ipv6`), waiting at most `connectTimeout` (a
  /// server that stopped accepting leaves a connect hanging in the backlog); `receiveTimeout`
  /// bounds every read.
  init(
    port: Int, ipv6: Bool = false, connectTimeout: Duration = .seconds(5),
    receiveTimeout: Duration = .seconds(5)
  ) throws {
    fd = socket(ipv6 ? AF_INET6 : AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    guard fd >= 0 else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EMFILE) }
    let flags = fcntl(fd, F_GETFL)
    _ = fcntl(fd, F_SETFL, flags | O_NONBLOCK)
    let result: Int32
    if ipv6 {
      var address = sockaddr_in6()
      address.sin6_family = sa_family_t(AF_INET6)
      address.sin6_port = in_port_t(UInt16(port).bigEndian)
      address.sin6_addr = in6addr_loopback
      result = Self.connect(fd, to: address)
    } else {
      var address = sockaddr_in()
      address.sin_family = sa_family_t(AF_INET)
      address.sin_port = in_port_t(UInt16(port).bigEndian)
      address.sin_addr.s_addr = inet_addr("127.0.0.1")
      result = Self.connect(fd, to: address)
    }
    if result != 0 {
      guard errno == EINPROGRESS else {
        close(fd)
        throw POSIXError(.ECONNREFUSED)
      }
      var entry = pollfd(fd: fd, events: Int16(POLLOUT), revents: 0)
      var error: Int32 = 0
      var length = socklen_t(MemoryLayout<Int32>.size)
      let ready = poll(&entry, 1, Int32(connectTimeout.milliseconds))
      getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &length)
      guard ready == 1, error == 0 else {
        close(fd)
        throw POSIXError(ready == 0 ? .ETIMEDOUT : .ECONNREFUSED)
      }
    }
    _ = fcntl(fd, F_SETFL, flags)
    var timeout = timeval(
      tv_sec: Int(receiveTimeout.milliseconds / 1000), tv_usec: Int(receiveTimeout.milliseconds % 1000) * 1000
    )
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
  }

  deinit { close(fd) }

  /// Writes all of `bytes`; false once the peer has closed or the send timed out.
  @discardableResult
  func send(_ bytes: [UInt8]) -> Bool {
    var offset = 0
    while offset < bytes.count {
      let sent = bytes[offset...].withUnsafeBytes {
        Foundation.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL))
      }
      if sent <= 0 { return false }
      offset += sent
    }
    return true
  }

  @discardableResult
  func send(_ text: String) -> Bool { send(Array(text.utf8)) }

  /// Sends one byte without blocking; false if the peer has closed (a full buffer is not a close).
  func dripByte(_ byte: UInt8) -> Bool {
    var value = byte
    let sent = Foundation.send(fd, &value, 1, Int32(MSG_NOSIGNAL | MSG_DONTWAIT))
    return sent == 1 || (sent < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
  }

  /// True if the server has closed this connection (EOF or reset), checked without waiting.
  func closedByPeer() -> Bool {
    var byte: UInt8 = 0
    let count = recv(fd, &byte, 1, Int32(MSG_PEEK | MSG_DONTWAIT))
    if count == 0 { return true }
    if count < 0 { return errno != EAGAIN && errno != EWOULDBLOCK }
    return false
  }

  /// Half-closes our side: the server reads EOF after what was sent.
  func finishSending() { shutdown(fd, Int32(SHUT_WR)) }

  /// Reads until more bytes arrive, EOF (false) or the receive timeout (nil).
  private func fill() -> Bool? {
    var chunk = [UInt8](repeating: 0, count: 65536)
    let count = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
    if count > 0 {
      buffer.append(contentsOf: chunk[0..<count])
      return true
    }
    if count < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) { return nil }
    return false
  }

  /// Reads one response with a `Content-Length` body (everything MHD and our router send).
  func readResponse() -> Outcome {
    let separator = Array("\r\n\r\n".utf8)
    var headerEnd = buffer.firstRange(of: separator)?.upperBound
    while headerEnd == nil {
      switch fill() {
      case true?: headerEnd = buffer.firstRange(of: separator)?.upperBound
      case false?: return .closed
      case nil: return .silent
      }
    }
    let end = headerEnd!
    var lines = String(decoding: buffer[..<end], as: UTF8.self).components(separatedBy: "\r\n")
    let statusLine = lines.removeFirst().split(separator: " ")
    guard statusLine.count >= 2, let status = Int(statusLine[1]) else { return .closed }
    var headers: [String: String] = [:]
    for line in lines where !line.isEmpty {
      let parts = line.split(separator: ":", maxSplits: 1)
      let value = parts.count > 1 ? parts[1].trimmingCharacters(in: .whitespaces) : ""
      // A repeated field is joined as RFC 9110 §5.3 combines it, so a test can see the repeat.
      headers[parts[0].lowercased()] = headers[parts[0].lowercased()].map { "\($0), \(value)" } ?? value
    }
    let length = Int(headers["content-length"] ?? "0") ?? 0
    while buffer.count < end + length {
      switch fill() {
      case true?: continue
      case false?: return .closed
      case nil: return .silent
      }
    }
    let body = String(decoding: buffer[end..<(end + length)], as: UTF8.self)
    buffer.removeFirst(end + length)
    return .response(status: status, headers: headers, body: body)
  }

  /// Reads until the bytes received (and not taken yet) contain `needle`; returns them up to and
  /// including it, or nil on EOF or the receive timeout (what was read stays for the next call).
  func read(until needle: String) -> String? {
    let target = Array(needle.utf8)
    while true {
      if let range = buffer.firstRange(of: target) {
        let text = String(decoding: buffer[..<range.upperBound], as: UTF8.self)
        buffer.removeFirst(range.upperBound)
        return text
      }
      guard fill() == true else { return nil }
    }
  }

  /// True if the server closes the connection (EOF or reset) before the receive timeout; bytes
  /// arriving meanwhile are read and dropped.
  func waitForClose() -> Bool {
    buffer.removeAll()
    while true {
      switch fill() {
      case true?: buffer.removeAll()
      case false?: return true
      case nil: return false
      }
    }
  }
}

extension RawSocket {
  /// A complete response, for tests that expect one.
  struct Response {
    var status: Int
    var headers: [String: String]
    var body: String
  }

  /// The next response; nil if the server closed or stayed silent instead.
  func response() -> Response? {
    guard case .response(let status, let headers, let body) = readResponse() else { return nil }
    return Response(status: status, headers: headers, body: body)
  }

  @discardableResult
  func write(_ bytes: [UInt8]) -> Bool { send(bytes) }

  @discardableResult
  func write(_ text: String) -> Bool { send(text) }
}

extension Duration {
  /// Whole milliseconds, for POSIX calls.
  var milliseconds: Int64 { components.seconds * 1000 + components.attoseconds / 1_000_000_000_000_000 }
}

/// Process-level facts the abuse tests measure: resident memory and the descriptor limit.
enum ProcessProbe {
  /// VmRSS from /proc/self/status, in KiB.
  static func residentKiB() -> Int {
    guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8) else { return 0 }
    for line in status.split(separator: "\n") where line.hasPrefix("VmRSS:") {
      return Int(line.split(separator: " ").dropFirst().first ?? "") ?? 0
    }
    return 0
  }

  /// Raises the soft RLIMIT_NOFILE to the hard limit; returns the soft limit now in force.
  static func raiseDescriptorLimit() -> Int {
    var limit = rlimit()
    getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
    if limit.rlim_cur < limit.rlim_max {
      limit.rlim_cur = limit.rlim_max
      setrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
      getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
    }
    return Int(limit.rlim_cur)
  }

  /// Descriptors open in this process now.
  static func openDescriptors() -> Int {
    (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd").count) ?? 0
  }
}
