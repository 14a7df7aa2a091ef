import Foundation
import GrocerCore
import GrocerHTTP
import GrocerHTTPServer
import GrocerTestSupport
import Testing

/// nginx speaking HTTP/2 (h2c with prior knowledge on one port, h2 over TLS on another,
/// `NginxH2Front`) in front of a GrocerHTTP server that echoes what it receives. The access log
/// records nginx's connection serial number per request, so a test can count connections.
final class EchoStack {
  let upstream: HTTPServer
  let front: NginxH2Front

  var h2cURL: String { "http://127.0.0.1:\(front.plainPort!)" }
  var tlsURL: String { front.url }
  /// The self-signed certificate nginx presents for `localhost` and 127.0.0.1 (its own CA).
  var certificatePath: String { front.certificatePath }

  private init(upstream: HTTPServer, front: NginxH2Front) {
    self.upstream = upstream
    self.front = front
  }

  /// The echo routes: `/echo…` answers any method with the request's body and, in headers, its
  /// method, target, content type and every `x-test-*` field; `/slow` answers after two seconds.
  static func router() -> Router {
    var router = Router(logger: .discarding())
    let echo: Route.Handler = { request in
      var headers = HTTPHeaders()
      headers.add("X-Echo-Method", request.method)
      let query = request.rawQuery.isEmpty ? "" : "?\(request.rawQuery)"
      headers.add("X-Echo-Target", request.rawPath + query)
      headers.add("X-Echo-Content-Type", request.headers["content-type"] ?? "none")
      for field in request.headers where field.name.lowercased().hasPrefix("x-test-") {
        headers.add("X-Echo-\(field.name.lowercased())", field.value)
      }
      return HTTPResponse(status: 200, headers: headers, body: request.body)
    }
    for method in ["GET", "POST", "PUT", "DELETE", "PATCH"] {
      router.on(method, "/echo", echo)
      router.on(method, "/echo/{id}", echo)
    }
    router.get(
      "/slow",
      { _ in
        try await Task.sleep(for: .seconds(2))
        return .text("late")
      })
    return router
  }

  /// Runs `body` with a fresh stack and stops the stack afterwards, also when `body` throws.
  static func run(_ body: (EchoStack) async throws -> Void) async throws {
    let stack = try await start()
    do {
      try await body(stack)
    } catch {
      await stack.stop()
      throw error
    }
    await stack.stop()
  }

  static func start() async throws -> EchoStack {
    let upstream = HTTPServer(
      configuration: HTTPServerConfiguration(
        port: 0, threadPoolSize: 2, maxBodyBytes: 4 * 1024 * 1024, shutdownGracePeriod: .milliseconds(100)),
      responder: router(), logger: .discarding())
    try await upstream.start()
    do {
      let front = try await NginxH2Front.start(upstreamPort: upstream.port, plainHTTP2: true, accessLog: true)
      return EchoStack(upstream: upstream, front: front)
    } catch {
      await upstream.shutdown()
      throw error
    }
  }

  func stop() async {
    front.stop()
    await upstream.shutdown()
  }

  /// The front's access log once it holds `count` lines (nginx writes a line after the response
  /// has gone, so a read right after the last answer can come too early), or after 5 s.
  func accessLog(count: Int) async throws -> [NginxH2Front.LogLine] {
    let front = self.front
    _ = await eventually(timeout: .seconds(5)) { ((try? front.accessLog()) ?? []).count >= count }
    return try front.accessLog()
  }
}

/// Binds an IPv4 TCP socket to an ephemeral loopback port; returns it and the port.
private func boundSocket() throws -> (fd: Int32, port: Int) {
  let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
  var address = sockaddr_in()
  address.sin_family = sa_family_t(AF_INET)
  address.sin_port = 0
  address.sin_addr.s_addr = inet_addr("127.0.0.1")
  var length = socklen_t(MemoryLayout<sockaddr_in>.size)
  let bound = withUnsafeMutablePointer(to: &address) {
    $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { pointer in
      bind(fd, pointer, length) == 0 && getsockname(fd, pointer, &length) == 0
    }
  }
  guard bound else {
    close(fd)
    throw POSIXError(.EADDRINUSE)
  }
  return (fd, Int(UInt16(bigEndian: address.sin_port)))
}

/// A server that never answers: the kernel completes TCP handshakes into the listen backlog,
/// but nobody ever accepts, reads or writes.
final class SilentServer: Sendable {
  let port: Int
  private let fd: Int32

  init() throws {
    let (fd, port) = try boundSocket()
    guard listen(fd, 128) == 0 else {
      close(fd)
      throw POSIXError(.EADDRINUSE)
    }
    self.fd = fd
    self.port = port
  }

  var url: String { "http://127.0.0.1:\(port)" }

  deinit { close(fd) }
}
