import Foundation
import Synchronization
import Testing

/// nginx terminating TLS and HTTP/2 (h2 by ALPN) in front of an HTTP/1.1 server on a local port,
/// as APNs's own front does: the way to test an HTTP/2 client against a libmicrohttpd server.
///
/// nginx runs in the foreground as a child process, with its configuration, a fresh self-signed
/// certificate for `localhost` and 127.0.0.1, logs and temp files in a new directory; `stop` kills
/// it and removes the directory. Missing nginx or openssl fails the test (never skips it).
///
/// ```swift
/// let front = try await NginxH2Front.start(upstreamPort: server.port)
/// let client = HTTP2Client(
///   configuration: HTTP2ClientConfiguration(baseURL: front.url, caFile: front.certificatePath), …)
/// …
/// front.stop()
/// ```
public final class NginxH2Front: @unchecked Sendable {
  public static let nginxPath = "/usr/sbin/nginx"
  public static let openSSLPath = "/usr/bin/openssl"

  /// The port nginx listens on (TLS, h2 and HTTP/1.1 by ALPN).
  public let port: Int
  /// With `plainHTTP2`: a second port speaking HTTP/2 without TLS (h2c, prior knowledge).
  public let plainPort: Int?
  /// The self-signed certificate nginx presents (its own CA): the client's `caFile`.
  public let certificatePath: String
  /// The folder holding the configuration, certificate, key and logs.
  public let directory: URL
  private let nginx: Process

  /// `https://localhost:<port>`: the name the certificate is for.
  public var url: String { "https://localhost:\(port)" }

  private init(port: Int, plainPort: Int?, certificatePath: String, directory: URL, nginx: Process) {
    self.port = port
    self.plainPort = plainPort
    self.certificatePath = certificatePath
    self.directory = directory
    self.nginx = nginx
  }

  /// Starts nginx in front of `127.0.0.1:<upstreamPort>` and waits until it accepts connections.
  /// `plainHTTP2` adds an h2c port; `accessLog` records one line per request (`accessLog()`), with
  /// nginx's connection serial number so a test can count connections.
  public static func start(
    upstreamPort: Int, plainHTTP2: Bool = false, accessLog: Bool = false
  ) async throws -> NginxH2Front {
    try #require(FileManager.default.isExecutableFile(atPath: nginxPath), "nginx is not installed")
    try #require(FileManager.default.isExecutableFile(atPath: openSSLPath), "openssl is not installed")
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent(
      "grocer-h2-front-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    let dir = directory.path
    let certificatePath = "\(dir)/cert.pem"
    try runToEnd(
      openSSLPath,
      [
        "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
        "-keyout", "\(dir)/key.pem", "-out", certificatePath, "-days", "2", "-subj", "/CN=localhost",
        "-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1",
      ])
    let port = try LocalPort.free()
    let plainPort = plainHTTP2 ? try LocalPort.free() : nil
    let plainListen = plainPort.map { "listen 127.0.0.1:\($0) http2;" } ?? ""
    let log = accessLog ? "access_log \(dir)/access.log grocer;" : "access_log off;"
    let configuration = """
      master_process off;
      pid \(dir)/nginx.pid;
      error_log \(dir)/error.log info;
      events { worker_connections 1024; }
      http {
        log_format grocer '$connection $request_method $request_uri $server_protocol $status';
        \(log)
        client_body_temp_path \(dir)/body;
        proxy_temp_path \(dir)/proxy;
        fastcgi_temp_path \(dir)/fastcgi;
        uwsgi_temp_path \(dir)/uwsgi;
        scgi_temp_path \(dir)/scgi;
        client_max_body_size 8m;
        upstream backend {
          server 127.0.0.1:\(upstreamPort);
          keepalive 64;
        }
        server {
          listen 127.0.0.1:\(port) ssl http2;
          \(plainListen)
          ssl_certificate \(certificatePath);
          ssl_certificate_key \(dir)/key.pem;
          http2_max_concurrent_streams 1000;
          keepalive_requests 1000000;
          location / {
            proxy_pass http://backend;
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
    let front = NginxH2Front(
      port: port, plainPort: plainPort, certificatePath: certificatePath, directory: directory, nginx: nginx)
    let deadline = ContinuousClock.now + .seconds(10)
    while !(LocalPort.accepts(port) && plainPort.map(LocalPort.accepts) ?? true) {
      guard nginx.isRunning, ContinuousClock.now < deadline else {
        let log = (try? String(contentsOfFile: "\(dir)/error.log", encoding: .utf8)) ?? ""
        front.stop()
        throw NginxFrontFailed(command: "nginx", output: log)
      }
      try await Task.sleep(for: .milliseconds(20))
    }
    return front
  }

  /// One access-log line per request nginx answered (with `accessLog`).
  public struct LogLine: Sendable, Hashable {
    public var connection: String
    public var method: String
    public var uri: String
    public var version: String
    public var status: String
  }

  /// What the access log holds so far (with `accessLog`; empty without).
  public func accessLog() throws -> [LogLine] {
    let path = directory.appendingPathComponent("access.log").path
    guard FileManager.default.fileExists(atPath: path) else { return [] }
    return try String(contentsOfFile: path, encoding: .utf8).split(separator: "\n").compactMap { line in
      let fields = line.split(separator: " ").map(String.init)
      guard fields.count == 5 else { return nil }
      return LogLine(
        connection: fields[0], method: fields[1], uri: fields[2], version: fields[3], status: fields[4])
    }
  }

  /// Kills nginx and removes its folder.
  public func stop() {
    if nginx.isRunning {
      // SIGKILL: a child spawned from a Dispatch thread inherits its blocked signal mask, and
      // nginx without a master process never unblocks SIGTERM.
      kill(nginx.processIdentifier, SIGKILL)
      nginx.waitUntilExit()
    }
    try? FileManager.default.removeItem(at: directory)
  }

  deinit { if nginx.isRunning { kill(nginx.processIdentifier, SIGKILL) } }

  /// Runs a command to completion; throws with its output if it fails.
  static func runToEnd(_ path: String, _ arguments: [String]) throws {
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
      throw NginxFrontFailed(
        command: "\(path) \(arguments.joined(separator: " "))", output: String(decoding: data, as: UTF8.self))
    }
  }
}

/// A command of the front (nginx, openssl) failed; its output tells why.
public struct NginxFrontFailed: Error, CustomStringConvertible {
  public let command: String
  public let output: String

  public var description: String { "\(command) failed: \(output)" }
}

/// Loopback TCP ports for tests.
public enum LocalPort {
  /// A port nobody listens on right now (bound to an ephemeral port, read, closed), never one
  /// this process was given before: the kernel may hand a closed port out again, and two
  /// services of one test system on one port answered each other's probes and requests.
  public static func free() throws -> Int {
    while true {
      let port = try ephemeral()
      if given.withLock({ $0.insert(port).inserted }) { return port }
    }
  }

  private static let given = Mutex<Set<Int>>([])

  private static func ephemeral() throws -> Int {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    defer { close(fd) }
    var address = loopback(port: 0)
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    let bound = withUnsafeMutablePointer(to: &address) {
      $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { pointer in
        bind(fd, pointer, length) == 0 && getsockname(fd, pointer, &length) == 0
      }
    }
    guard bound else { throw POSIXError(.EADDRINUSE) }
    return Int(UInt16(bigEndian: address.sin_port))
  }

  /// True if a TCP connection to 127.0.0.1:`port` is accepted.
  public static func accepts(_ port: Int) -> Bool {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    defer { close(fd) }
    var address = loopback(port: port)
    return withUnsafePointer(to: &address) {
      $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
        connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0
      }
    }
  }

  private static func loopback(port: Int) -> sockaddr_in {
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_port = in_port_t(UInt16(port).bigEndian)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    return address
  }
}
