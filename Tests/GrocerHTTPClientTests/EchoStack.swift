import Foundation
import GrocerCore
import GrocerHTTP
import Testing

/// nginx speaking HTTP/2 (h2c with prior knowledge on one port, h2 over TLS on another) in
/// front of a GrocerHTTP server that echoes what it receives.
///
/// nginx runs in the foreground as a child process with its configuration, logs and temp files
/// in a fresh directory; `stop` kills it and removes the directory. The access log records
/// nginx's connection serial number per request, so a test can count connections.
final class EchoStack {
  let upstream: HTTPServer
  let nginx: Process
  let directory: URL
  let h2cPort: Int
  let tlsPort: Int
  /// The self-signed certificate nginx presents for `localhost` and 127.0.0.1 (its own CA).
  let certificatePath: String

  static let nginxPath = "/usr/sbin/nginx"
  static let openSSLPath = "/usr/bin/openssl"

  var h2cURL: String { "http://127.0.0.1:\(h2cPort)" }
  var tlsURL: String { "https://localhost:\(tlsPort)" }

  private init(
    upstream: HTTPServer, nginx: Process, directory: URL, h2cPort: Int, tlsPort: Int, certificatePath: String
  ) {
    self.upstream = upstream
    self.nginx = nginx
    self.directory = directory
    self.h2cPort = h2cPort
    self.tlsPort = tlsPort
    self.certificatePath = certificatePath
  }

  /// The echo routes: `/echo…` answers any method with the request's body and, in headers, its
  /// method, target, content type and every `x-test-*` field; `/slow` answers after two seconds.
  static func router() -> Router {
    var router = Router(logger: .discarding())
    let echo: Route.Handler = .sync { request in
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
      .async { _ in
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
    // Missing nginx or openssl fails the test: these tests must not quietly skip.
    try #require(FileManager.default.isExecutableFile(atPath: nginxPath), "nginx is not installed")
    try #require(FileManager.default.isExecutableFile(atPath: openSSLPath), "openssl is not installed")
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent(
      "grocer-h2-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    let dir = directory.path

    let upstream = HTTPServer(
      configuration: HTTPServerConfiguration(
        port: 0, threadPoolSize: 2, maxBodyBytes: 4 * 1024 * 1024, shutdownGracePeriod: .milliseconds(100)),
      responder: router(), logger: .discarding())
    try await upstream.start()

    let certificatePath = "\(dir)/cert.pem"
    try run(
      openSSLPath,
      [
        "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
        "-keyout", "\(dir)/key.pem", "-out", certificatePath, "-days", "2", "-subj", "/CN=localhost",
        "-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1",
      ])

    let h2cPort = try freePort()
    let tlsPort = try freePort()
    let configuration = """
      master_process off;
      pid \(dir)/nginx.pid;
      error_log \(dir)/error.log info;
      events { worker_connections 1024; }
      http {
        log_format grocer '$connection $request_method $request_uri $server_protocol $status';
        access_log \(dir)/access.log grocer;
        client_body_temp_path \(dir)/body;
        proxy_temp_path \(dir)/proxy;
        fastcgi_temp_path \(dir)/fastcgi;
        uwsgi_temp_path \(dir)/uwsgi;
        scgi_temp_path \(dir)/scgi;
        client_max_body_size 8m;
        upstream echo {
          server 127.0.0.1:\(upstream.port);
          keepalive 32;
        }
        server {
          listen 127.0.0.1:\(h2cPort) http2;
          listen 127.0.0.1:\(tlsPort) ssl http2;
          ssl_certificate \(certificatePath);
          ssl_certificate_key \(dir)/key.pem;
          location / {
            proxy_pass http://echo;
            proxy_http_version 1.1;
            proxy_set_header Connection "";
          }
        }
      }
      """
    try configuration.write(toFile: "\(dir)/nginx.conf", atomically: true, encoding: .utf8)

    let nginx = Process()
    nginx.executableURL = URL(fileURLWithPath: nginxPath)
    nginx.arguments = ["-p", dir, "-c", "\(dir)/nginx.conf", "-e", "\(dir)/error.log", "-g", "daemon off;"]
    nginx.standardOutput = FileHandle.nullDevice
    nginx.standardError = FileHandle.nullDevice
    try nginx.run()
    let stack = EchoStack(
      upstream: upstream, nginx: nginx, directory: directory, h2cPort: h2cPort, tlsPort: tlsPort,
      certificatePath: certificatePath)
    let deadline = ContinuousClock.now + .seconds(10)
    while !(canConnect(h2cPort) && canConnect(tlsPort)) {
      guard nginx.isRunning, ContinuousClock.now < deadline else {
        let log = (try? String(contentsOfFile: "\(dir)/error.log", encoding: .utf8)) ?? ""
        await stack.stop()
        throw CommandFailed(command: "nginx", output: log)
      }
      try await Task.sleep(for: .milliseconds(20))
    }
    return stack
  }

  func stop() async {
    if nginx.isRunning {
      // SIGKILL: a child spawned from a Dispatch thread inherits its blocked signal mask, and
      // nginx without a master process never unblocks SIGTERM.
      kill(nginx.processIdentifier, SIGKILL)
      nginx.waitUntilExit()
    }
    await upstream.shutdown()
    try? FileManager.default.removeItem(at: directory)
  }

  /// One access log line per request nginx answered.
  struct LogLine {
    var connection: String
    var method: String
    var uri: String
    var version: String
    var status: String
  }

  func accessLog() throws -> [LogLine] {
    let text = try String(
      contentsOfFile: directory.appendingPathComponent("access.log").path, encoding: .utf8)
    return text.split(separator: "\n").compactMap { line in
      let fields = line.split(separator: " ").map(String.init)
      guard fields.count == 5 else { return nil }
      return LogLine(
        connection: fields[0], method: fields[1], uri: fields[2], version: fields[3], status: fields[4])
    }
  }

  /// Runs a command to completion; throws with its output if it fails.
  private static func run(_ path: String, _ arguments: [String]) throws {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: path)
    process.arguments = arguments
    let output = Pipe()
    process.standardOutput = output
    process.standardError = output
    try process.run()
    let data = output.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    guard process.terminationStatus == 0 else {
      throw CommandFailed(
        command: "\(path) \(arguments.joined(separator: " "))", output: String(decoding: data, as: UTF8.self))
    }
  }
}

struct CommandFailed: Error {
  let command: String
  let output: String
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

/// A port nobody listens on right now (bound, read, closed): connecting to it is refused.
func freePort() throws -> Int {
  let (fd, port) = try boundSocket()
  close(fd)
  return port
}

/// True if a TCP connection to 127.0.0.1:`port` is accepted.
func canConnect(_ port: Int) -> Bool {
  let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
  defer { close(fd) }
  var address = sockaddr_in()
  address.sin_family = sa_family_t(AF_INET)
  address.sin_port = in_port_t(UInt16(port).bigEndian)
  address.sin_addr.s_addr = inet_addr("127.0.0.1")
  return withUnsafePointer(to: &address) {
    $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
      connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0
    }
  }
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
