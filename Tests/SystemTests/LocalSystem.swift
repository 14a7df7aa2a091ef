import Foundation
import GrocerAMQP
import GrocerAuth
import GrocerCore
import GrocerTestSupport
import Testing

#if canImport(FoundationNetworking)
  import FoundationNetworking
#endif

/// The whole system as `make run` runs it, for one test: the five service executables (debug
/// build) on ports of their own, with their own data directories and queue names (so a running
/// `make run` or another test is not disturbed), the demo assortment loaded, and nginx as the
/// gateway in front (`deploy/local/gateway.sh` with the same configuration `make run` uses).
final class LocalSystem: @unchecked Sendable {
  let gateway: URL
  let secret = Settings.localJWTSecret
  private let directory: URL
  private let gatewayEnvironment: [String: String]
  private var services: [(name: String, process: RunningService)] = []
  private var nginx: Process?
  private let queues: [String]
  /// The broker vhost of this system alone (`isolated`), deleted by `stop`; nil: `/`.
  let vhost: String?
  /// The services' queue names, by service (`order-service` consumes no events).
  let queueNames: [String: String]
  /// Request/reply queues: StockService's reservations and catalogue, CartService's checkout.
  let rpcQueues: [String]

  static let names = ["stock-service", "cart-service", "order-service", "tracking-service", "notify-gateway"]

  private init(
    gateway: URL, directory: URL, gatewayEnvironment: [String: String], queues: [String], vhost: String?,
    queueNames: [String: String], rpcQueues: [String]
  ) {
    self.gateway = gateway
    self.directory = directory
    self.gatewayEnvironment = gatewayEnvironment
    self.queues = queues
    self.vhost = vhost
    self.queueNames = queueNames
    self.rpcQueues = rpcQueues
  }

  /// The broker as the services of this system see it.
  var amqp: AMQPConfiguration {
    var configuration = TestBroker.configuration("grocer-system-tests")
    if let vhost { configuration.url = AMQPConfiguration.defaultURL + vhost }
    return configuration
  }

  /// Starts everything and returns once the gateway reaches every service's readiness.
  /// `gatewayRateLimit`: the gateway's per-token limit (requests per second, burst) instead of
  /// `deploy/local/gateway.sh`'s default.
  /// `logLevel`: the services' `GROCER_LOG_LEVEL`. `isolated`: in a broker vhost of its own
  /// (with the dead-letter policy), so events published to `grocer.events` reach this system's
  /// queues only; costs a few seconds of `rabbitmqctl`.
  static func start(
    gatewayRateLimit: (perSecond: Int, burst: Int)? = nil, logLevel: String = "warning",
    isolated: Bool = false
  ) async throws -> LocalSystem {
    try TestBroker.ensureRunning()
    let run = String(UUID().uuidString.prefix(6)).lowercased()
    var vhost: String?
    if isolated {
      let name = "grocer-system-\(run)"
      try await TestBroker.ctl(["add_vhost", name])
      try await TestBroker.ctl(["set_permissions", "-p", name, "guest", ".*", ".*", ".*"])
      try await TestBroker.setPolicy(vhost: name)
      vhost = name
    }
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("grocer-system-\(run)")
    try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    var ports: [String: Int] = [:]
    for name in names { ports[name] = try LocalPort.free() }
    let gatewayPort = try LocalPort.free()

    // Queue names of this run only: nothing else consumes them.
    let (stock, cart, order) = ("stock-e2e-\(run)", "cart-e2e-\(run)", "order-e2e-\(run)")
    let (tracking, notify) = ("tracking-e2e-\(run)", "notify-e2e-\(run)")
    let shared = [
      "GROCER_LOG_LEVEL": logLevel, "GROCER_QUEUE_EXPIRES": "600",
      "GROCER_JWT_SECRET": Settings.localJWTSecret,
      "GROCER_HTTP_HOST": "127.0.0.1",
    ].merging(vhost.map { ["GROCER_AMQP_URL": AMQPConfiguration.defaultURL + $0] } ?? [:]) { $1 }
    let own: [String: [String: String]] = [
      "stock-service": [
        "GROCER_SERVICE_NAME": stock, "GROCER_RESERVATION_QUEUE": "\(stock).reservations",
        "GROCER_CATALOGUE_QUEUE": "\(stock).catalogue",
      ],
      "cart-service": [
        "GROCER_SERVICE_NAME": cart, "GROCER_CART_CHECKOUT_QUEUE": "\(cart).checkout",
        "GROCER_CATALOGUE_QUEUE": "\(stock).catalogue",
      ],
      "order-service": [
        "GROCER_SERVICE_NAME": order, "GROCER_CART_CHECKOUT_QUEUE": "\(cart).checkout",
        "GROCER_RESERVATION_QUEUE": "\(stock).reservations",
      ],
      "tracking-service": ["GROCER_SERVICE_NAME": tracking],
      "notify-gateway": ["GROCER_SERVICE_NAME": notify],
    ]
    var gatewayEnvironment = [
      "GROCER_VAR_DIR": directory.appendingPathComponent("var").path, "GROCER_GATEWAY_PORT": "\(gatewayPort)",
    ]
    if let gatewayRateLimit {
      gatewayEnvironment["GROCER_GATEWAY_RATE_LIMIT"] = "\(gatewayRateLimit.perSecond)"
      gatewayEnvironment["GROCER_GATEWAY_RATE_BURST"] = "\(gatewayRateLimit.burst)"
    }
    for (name, variable) in [
      ("stock-service", "GROCER_STOCK_PORT"), ("cart-service", "GROCER_CART_PORT"),
      ("order-service", "GROCER_ORDER_PORT"), ("tracking-service", "GROCER_TRACKING_PORT"),
      ("notify-gateway", "GROCER_NOTIFY_PORT"),
    ] {
      gatewayEnvironment[variable] = "\(ports[name]!)"
    }
    let queues =
      [stock, cart, order, tracking, notify].flatMap { [$0, "\($0).parking"] } + [
        "\(stock).reservations", "\(stock).catalogue", "\(cart).checkout",
      ]
    let system = LocalSystem(
      gateway: URL(string: "http://127.0.0.1:\(gatewayPort)")!, directory: directory,
      gatewayEnvironment: gatewayEnvironment, queues: queues, vhost: vhost,
      queueNames: [
        "stock-service": stock, "cart-service": cart, "tracking-service": tracking, "notify-gateway": notify,
      ],
      rpcQueues: ["\(stock).reservations", "\(stock).catalogue", "\(cart).checkout"])
    do {
      for name in names {
        let environment = shared.merging(own[name]!) { $1 }.merging([
          "GROCER_HTTP_PORT": "\(ports[name]!)",
          "GROCER_DATA_DIR": directory.appendingPathComponent("data/\(name)").path,
        ]) { $1 }
        let executable = try ServiceExecutable(name, environment: environment)
        if name == "stock-service" || name == "cart-service" {
          try #require(try executable.runToEnd(["load-demo"]) == 0, "\(name) load-demo failed")
        }
        let process = try executable.start()
        system.services.append((name, process))
        let ready = await process.answers(URL(string: "http://127.0.0.1:\(ports[name]!)/health/ready")!)
        try #require(ready, "\(name) did not become ready")
      }
      try await system.startGateway()
    } catch {
      await system.stop()
      throw error
    }
    return system
  }

  /// Whether every service process still runs.
  var allRunning: Bool { services.allSatisfy { $0.process.isRunning } }

  /// Stops the gateway and every service, removes this run's queues and files; returns what
  /// each service logged.
  @discardableResult
  func stop() async -> [String: String] {
    if let nginx, nginx.isRunning {
      nginx.terminate()
      _ = await eventually(timeout: .seconds(5)) { !nginx.isRunning }
    }
    var logs: [String: String] = [:]
    for service in services.reversed() { logs[service.name] = await service.process.terminate().log }
    services.removeAll()
    if let vhost {
      _ = try? await TestBroker.ctl(["delete_vhost", vhost])
    } else {
      try? await AMQPAdmin.deleteQueues(configuration: TestBroker.configuration(), queues)
    }
    try? FileManager.default.removeItem(at: directory)
    return logs
  }

  /// A token for `subject` signed with the services' secret.
  func token(_ subject: String, role: Principal.Role = .customer, hubs: [String] = []) -> String {
    let now = Date()
    return HS256Signer(secret: secret).sign(
      claims: TokenClaims(subject: subject, role: role, hubs: hubs, issuedAt: now, expiresAt: now + 3600))
  }

  /// One request through the gateway: its status and body.
  func call(
    _ method: String, _ path: String, token: String? = nil, json: Any? = nil, headers: [String: String] = [:]
  ) async throws -> (status: Int, body: Data) {
    let reply = try await send(method, path, token: token, json: json, headers: headers)
    return (reply.status, reply.body)
  }

  /// One request through the gateway: its status, headers and body.
  func send(
    _ method: String, _ path: String, token: String? = nil, json: Any? = nil, headers: [String: String] = [:]
  ) async throws -> (status: Int, headers: [String: String], body: Data) {
    var request = URLRequest(url: URL(string: gateway.absoluteString + path)!)
    request.httpMethod = method
    if let token { request.setValue("Bearer \(token)", forHTTPHeaderField: "Authorization") }
    if let json {
      request.httpBody = try JSONSerialization.data(withJSONObject: json)
      request.setValue("application/json", forHTTPHeaderField: "Content-Type")
    }
    for (name, value) in headers { request.setValue(value, forHTTPHeaderField: name) }
    let (data, response) = try await URLSession.shared.data(for: request)
    let http = response as? HTTPURLResponse
    var fields: [String: String] = [:]
    for (name, value) in http?.allHeaderFields ?? [:] {
      if let name = name as? String, let value = value as? String { fields[name.lowercased()] = value }
    }
    return (http?.statusCode ?? 0, fields, data)
  }

  /// The gateway as `make run` has it: `deploy/local/gateway.sh check` renders and checks the
  /// configuration, and nginx runs it in the foreground as this test's child (a daemonized nginx
  /// would outlive the script that started it, and Foundation's `Process` never sees that script
  /// end).
  private func startGateway() async throws {
    let check = Process()
    check.executableURL = URL(fileURLWithPath: "/bin/bash")
    check.arguments = [
      TestBroker.repositoryRoot.appendingPathComponent("deploy/local/gateway.sh").path, "check",
    ]
    check.environment = ProcessInfo.processInfo.environment.merging(gatewayEnvironment) { $1 }
    check.standardOutput = FileHandle.nullDevice
    check.standardError = FileHandle.nullDevice
    try check.run()
    let checked = await eventually(timeout: .seconds(20)) { !check.isRunning }
    try #require(checked && check.terminationStatus == 0, "deploy/local/gateway.sh check failed")

    let prefix = gatewayEnvironment["GROCER_VAR_DIR"]! + "/nginx"
    let nginx = Process()
    nginx.executableURL = URL(fileURLWithPath: "/usr/sbin/nginx")
    nginx.arguments = [
      "-p", prefix + "/", "-c", prefix + "/conf/gateway.conf", "-e", "logs/error.log", "-g", "daemon off;",
    ]
    nginx.standardOutput = FileHandle.nullDevice
    nginx.standardError = FileHandle.nullDevice
    try nginx.run()
    self.nginx = nginx
    let health = gateway.appendingPathComponent("gateway/health")
    let up = await eventually(timeout: .seconds(10)) {
      guard let (_, response) = try? await URLSession.shared.data(from: health) else { return false }
      return (response as? HTTPURLResponse)?.statusCode == 200
    }
    try #require(up, "the gateway did not answer")
  }
}
