import Foundation
import GrocerAMQP
import GrocerAuth
import GrocerCore
import GrocerRabbitMQ
import GrocerRuntime
import GrocerTestSupport
import Testing

#if canImport(FoundationNetworking)
  import FoundationNetworking
#endif

/// The whole system as `make run` runs it, for one test: the five service executables (debug
/// build) on ports of their own, with their own data directories and queue names (so a running
/// `make run` or another test is not disturbed), the demo assortment loaded, and nginx as the
/// gateway in front (`deploy/local/gateway.sh` with the same configuration `make run` uses).
///
/// On PostgreSQL (`Options.engine`, `make test DB=postgres`) each service gets fresh databases of
/// its own, and can run as several replicas behind the gateway (`Options.replicas`).
///
/// For the fault suite it can also kill a service with SIGKILL and start it again on the same
/// port and data directory, put one service's data directory on a small tmpfs that can be filled
/// (disk full), and run the APNs simulator as a process of its own behind an HTTP/2 TLS front
/// (so its record of what each token received survives NotifyGateway being killed).
final class LocalSystem: @unchecked Sendable {
  let gateway: URL
  let secret = Settings.localJWTSecret
  /// The run's folder (data, logs, the simulator's keys): printed by the fault suite.
  let directory: URL
  private let gatewayEnvironment: [String: String]
  private let lock = NSLock()
  private var services: [String: ServiceSlot] = [:]
  private var nginx: Process?
  private var apnsSimulator: Process?
  private var apnsFront: NginxH2Front?
  private var mounts: [String] = []
  /// Service → its database file's name (as on SQLite) → the PostgreSQL database holding it.
  private let databases: [String: [String: String]]
  /// Every process's name, the services' replicas after their first (`order-service-2`, …).
  let processNames: [String]
  /// The run's queues: each service's queue and parking queue, and the request/reply queues.
  let queues: [String]
  /// The broker vhost of this system alone (`Options.isolated`), deleted by `stop`; nil: `/`.
  let vhost: String?
  /// Whether the services run on the tests' three-node cluster (`Options.cluster`).
  let onCluster: Bool
  /// The services' queue names, by service (`order-service` consumes no events).
  let queueNames: [String: String]
  /// Request/reply queues: StockService's reservations and catalogue, CartService's checkout.
  let rpcQueues: [String]
  /// Where the APNs simulator answers `GET /v1/sim/devices/{token}` (NotifyGateway's own port
  /// unless `Options.externalAPNs`).
  private(set) var simulatorURL: URL

  /// How the system is set up beyond what the journey needs.
  struct Options: Sendable {
    /// Runs `notify-gateway apns-simulator` as its own process behind nginx (HTTP/2, TLS) and
    /// points NotifyGateway's real transport at it.
    var externalAPNs = false
    /// Services whose data directory is a tmpfs of `tmpfsSize` (needs root), for `fillDisk`.
    var tmpfsServices: [String] = []
    var tmpfsSize = "64m"
    /// The gateway's per-token limit (requests per second, burst) instead of
    /// `deploy/local/gateway.sh`'s default.
    var gatewayRateLimit: (perSecond: Int, burst: Int)?
    /// The services' `GROCER_LOG_LEVEL`.
    var logLevel = "warning"
    /// In a broker vhost of its own (with the dead-letter policy), so events published to
    /// `grocer.events` reach this system's queues only, and other tests' events never reach it;
    /// costs a few seconds of `rabbitmqctl`.
    var isolated = false
    /// Where the services keep their data: SQLite files, or fresh PostgreSQL databases.
    var engine = TestEngine.selected
    /// Processes per service (more than one needs PostgreSQL), the gateway spreading requests.
    var replicas = 1
    /// On the tests' three-node RabbitMQ cluster (`TestCluster`, every node in
    /// `GROCER_AMQP_URLS`) instead of the single node; needs `isolated`.
    var cluster = false
  }

  /// One service process, with what it takes to start it again the same way.
  private final class ServiceSlot: @unchecked Sendable {
    let name: String
    let port: Int
    let executable: ServiceExecutable
    let dataDirectory: URL
    let logPath: String
    var process: Process?

    init(name: String, port: Int, executable: ServiceExecutable, dataDirectory: URL, logPath: String) {
      self.name = name
      self.port = port
      self.executable = executable
      self.dataDirectory = dataDirectory
      self.logPath = logPath
    }
  }

  static let names = ["stock-service", "cart-service", "order-service", "tracking-service", "notify-gateway"]

  /// The database files of each service, as SQLite names them.
  static let databaseFiles = [
    "stock-service": ["stock.sqlite"], "cart-service": ["cart.sqlite"],
    "order-service": ["order.sqlite", "payment-simulator.sqlite"], "tracking-service": ["tracking.sqlite"],
    "notify-gateway": ["notify.sqlite"],
  ]

  private init(
    gateway: URL, directory: URL, gatewayEnvironment: [String: String], queues: [String], simulatorURL: URL,
    vhost: String?, onCluster: Bool, queueNames: [String: String], rpcQueues: [String],
    databases: [String: [String: String]], processNames: [String]
  ) {
    self.onCluster = onCluster
    self.databases = databases
    self.processNames = processNames
    self.gateway = gateway
    self.directory = directory
    self.gatewayEnvironment = gatewayEnvironment
    self.queues = queues
    self.simulatorURL = simulatorURL
    self.vhost = vhost
    self.queueNames = queueNames
    self.rpcQueues = rpcQueues
  }

  /// The broker as the services of this system see it.
  var amqp: AMQPConfiguration {
    if onCluster { return TestCluster.configuration("grocer-system-tests", vhost: vhost) }
    var configuration = TestBroker.configuration("grocer-system-tests")
    if let vhost { configuration.url = AMQPConfiguration.defaultURL + vhost }
    return configuration
  }

  /// `rabbitmqctl` against the broker this system runs on.
  @discardableResult
  static func brokerCtl(_ arguments: [String], cluster: Bool) async throws -> String {
    cluster ? try await TestCluster.ctl(node: 1, arguments) : try await TestBroker.ctl(arguments)
  }

  /// A `rabbitmqctl list_…` table of the broker this system runs on.
  func brokerTable(_ arguments: [String]) async throws -> [[String]] {
    onCluster ? try await TestCluster.table(arguments) : try await TestBroker.table(arguments)
  }

  /// Starts everything and returns once the gateway reaches every service's readiness.
  static func start(_ options: Options = Options()) async throws -> LocalSystem {
    try #require(!options.cluster || options.isolated, "a system on the cluster runs in a vhost of its own")
    if options.cluster { try await TestCluster.start() } else { try TestBroker.ensureRunning() }
    let run = String(UUID().uuidString.prefix(6)).lowercased()
    var vhost: String?
    if options.isolated {
      let name = "grocer-system-\(run)"
      try await brokerCtl(["add_vhost", name], cluster: options.cluster)
      try await brokerCtl(
        ["set_permissions", "-p", name, "guest", ".*", ".*", ".*"], cluster: options.cluster)
      if options.cluster {
        try await TestCluster.setPolicy(vhost: name)
      } else {
        try await TestBroker.setPolicy(vhost: name)
      }
      vhost = name
    }
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("grocer-system-\(run)")
    try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    try #require(options.replicas == 1 || options.engine == .postgres, "replicas need PostgreSQL")
    var ports: [String: Int] = [:]
    for name in names { ports[name] = try freePort(replicas: options.replicas) }
    var databases: [String: [String: String]] = [:]
    if options.engine == .postgres {
      for name in names {
        for file in databaseFiles[name]! {
          let prefix =
            "system_"
            + file.replacingOccurrences(of: ".sqlite", with: "").replacingOccurrences(
              of: "-", with: "_")
          databases[name, default: [:]][file] = try TestPostgres.freshDatabase(prefix)
        }
      }
    }
    let processNames = names.flatMap { name in (1...options.replicas).map { replicaName(name, $0) } }
    let gatewayPort = try LocalPort.free()

    // Queue names of this run only: nothing else consumes them.
    let (stock, cart, order) = ("stock-e2e-\(run)", "cart-e2e-\(run)", "order-e2e-\(run)")
    let (tracking, notify) = ("tracking-e2e-\(run)", "notify-e2e-\(run)")
    let shared = [
      "GROCER_LOG_LEVEL": options.logLevel, "GROCER_QUEUE_EXPIRES": "600",
      "GROCER_JWT_SECRET": Settings.localJWTSecret,
      "GROCER_HTTP_HOST": "127.0.0.1",
    ].merging(vhost.map { ["GROCER_AMQP_URL": AMQPConfiguration.defaultURL + $0] } ?? [:]) { $1 }
      .merging(
        options.cluster ? ["GROCER_AMQP_URLS": TestCluster.urls(vhost: vhost).joined(separator: ",")] : [:]
      ) { $1 }
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
      "GROCER_DB": options.engine.rawValue, "GROCER_REPLICAS": "\(options.replicas)",
      // The debug build's stock-service draws the demo images the gateway serves.
      "GROCER_BIN_DIR": TestBroker.repositoryRoot.appendingPathComponent(".build/debug").path,
    ]
    if let limit = options.gatewayRateLimit {
      gatewayEnvironment["GROCER_GATEWAY_RATE_LIMIT"] = "\(limit.perSecond)"
      gatewayEnvironment["GROCER_GATEWAY_RATE_BURST"] = "\(limit.burst)"
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
      gatewayEnvironment: gatewayEnvironment, queues: queues,
      simulatorURL: URL(string: "http://127.0.0.1:\(ports["notify-gateway"]!)")!, vhost: vhost,
      onCluster: options.cluster,
      queueNames: [
        "stock-service": stock, "cart-service": cart, "tracking-service": tracking, "notify-gateway": notify,
      ],
      rpcQueues: ["\(stock).reservations", "\(stock).catalogue", "\(cart).checkout"], databases: databases,
      processNames: processNames)
    do {
      var notifyEnvironment: [String: String] = [:]
      if options.externalAPNs { notifyEnvironment = try await system.startAPNsSimulator() }
      let logs = directory.appendingPathComponent("log")
      try FileManager.default.createDirectory(at: logs, withIntermediateDirectories: true)
      for name in names {
        let data = directory.appendingPathComponent("data/\(name)")
        try FileManager.default.createDirectory(at: data, withIntermediateDirectories: true)
        if options.tmpfsServices.contains(name) {
          try system.mountTmpfs(at: data.path, size: options.tmpfsSize)
        }
        var serviceEnvironment = shared.merging(own[name]!) { $1 }.merging([
          "GROCER_HTTP_PORT": "\(ports[name]!)", "GROCER_DATA_DIR": data.path,
        ]) { $1 }.merging(name == "notify-gateway" ? notifyEnvironment : [:]) { $1 }
        if let urls = databases[name] {
          serviceEnvironment["GROCER_DATABASE_URL"] = urls[databaseFiles[name]![0]]
          serviceEnvironment["GROCER_PAYMENT_SIM_DATABASE_URL"] = urls["payment-simulator.sqlite"]
        }
        if name == "stock-service" || name == "cart-service" {
          // A tenth of the demo: every stock.changed it publishes is applied by CartService,
          // and the 9,000 of the full one (on PostgreSQL a transaction each) were most of a
          // start, and kept CartService busy for the first half minute of a test.
          let setup = try ServiceExecutable(
            name, environment: serviceEnvironment.merging(["GROCER_DEMO_PRODUCTS": "300"]) { $1 })
          try #require(try setup.runToEnd(["load-demo"]) == 0, "\(name) load-demo failed")
        }
        for replica in 1...options.replicas {
          // Replica k listens 100 × (k − 1) above the first, as the gateway expects.
          let (process, port) = (replicaName(name, replica), ports[name]! + 100 * (replica - 1))
          let executable = try ServiceExecutable(
            name,
            environment: serviceEnvironment.merging([
              "GROCER_HTTP_PORT": "\(port)", "GROCER_REPLICA_ID": process,
            ]) { $1 })
          let slot = ServiceSlot(
            name: process, port: port, executable: executable, dataDirectory: data,
            logPath: logs.appendingPathComponent("\(process).log").path)
          system.lock.withLock { system.services[process] = slot }
          try await system.launch(slot)
        }
      }
      try await system.startGateway()
    } catch {
      await system.stop()
      throw error
    }
    return system
  }

  /// Whether every service process still runs.
  var allRunning: Bool {
    lock.withLock { services.values.allSatisfy { $0.process?.isRunning == true } }
  }

  /// Stops the gateway and every service, removes this run's queues and files; returns what
  /// each service logged. `keepFiles` leaves the data and logs (not a tmpfs: it is unmounted)
  /// for a look afterwards.
  @discardableResult
  func stop(keepFiles: Bool = false) async -> [String: String] {
    if let nginx, nginx.isRunning {
      nginx.terminate()
      _ = await eventually(timeout: .seconds(5)) { !nginx.isRunning }
    }
    let slots = lock.withLock { processNames.reversed().compactMap { services[$0] } }
    for slot in slots {
      guard let process = slot.process, process.isRunning else { continue }
      kill(process.processIdentifier, SIGTERM)
      if !(await eventually(timeout: .seconds(20)) { !process.isRunning }) {
        kill(process.processIdentifier, SIGKILL)
        _ = await eventually(timeout: .seconds(5)) { !process.isRunning }
      }
    }
    if let apnsSimulator, apnsSimulator.isRunning {
      kill(apnsSimulator.processIdentifier, SIGKILL)
      _ = await eventually(timeout: .seconds(5)) { !apnsSimulator.isRunning }
    }
    apnsFront?.stop()
    for mount in mounts { _ = try? Self.run("/bin/umount", ["-l", mount]) }
    if let vhost {
      _ = try? await Self.brokerCtl(["delete_vhost", vhost], cluster: onCluster)
    } else {
      try? await AMQPAdmin.deleteQueues(configuration: TestBroker.configuration(), queues)
    }
    var logs: [String: String] = [:]
    for slot in slots { logs[slot.name] = (try? String(contentsOfFile: slot.logPath, encoding: .utf8)) ?? "" }
    if !keepFiles {
      try? FileManager.default.removeItem(at: directory)
      for url in databases.values.flatMap(\.values) { TestPostgres.giveBack(url) }
    }
    return logs
  }

  /// The PostgreSQL database holding what SQLite keeps in the service's `file`; nil on SQLite.
  func databaseURL(_ service: String, _ file: String) -> String? { databases[service]?[file] }

  /// The name of replica `k` of `service`: the first keeps the service's own.
  static func replicaName(_ service: String, _ k: Int) -> String { k == 1 ? service : "\(service)-\(k)" }

  /// A free port whose replicas' ports (100 apart) are free too.
  static func freePort(replicas: Int) throws -> Int {
    while true {
      let port = try LocalPort.free()
      let others = (1..<replicas).map { port + 100 * $0 }
      if others.allSatisfy({ $0 < 65_536 && !LocalPort.accepts($0) }) { return port }
    }
  }

  // MARK: - Faults

  /// The service's HTTP base URL (not through the gateway).
  func serviceURL(_ name: String) -> URL {
    URL(string: "http://127.0.0.1:\(slot(name).port)")!
  }

  /// The service's data directory (its SQLite databases).
  func dataDirectory(_ name: String) -> URL { slot(name).dataDirectory }

  /// The service's log file (stderr of every start, appended).
  func logPath(_ name: String) -> String { slot(name).logPath }

  /// Kills the service with SIGKILL (no draining, no clean close) and waits until it is gone.
  func kill9(_ name: String) async throws {
    let slot = slot(name)
    guard let process = slot.process else { return }
    kill(process.processIdentifier, SIGKILL)
    let gone = await eventually(timeout: .seconds(10)) { !process.isRunning }
    try #require(gone, "\(name) did not die on SIGKILL")
  }

  /// Starts the service again on its port and data directory; returns once it is ready.
  func restart(_ name: String) async throws {
    try await launch(slot(name))
  }

  /// Fills the tmpfs holding the service's data directory with a file until writing fails
  /// (ENOSPC); returns how many bytes it took. `freeDisk` removes the file.
  func fillDisk(_ name: String) throws -> Int {
    let path = slot(name).dataDirectory.appendingPathComponent("disk-full.filler").path
    try #require(mounts.contains(slot(name).dataDirectory.path), "\(name)'s data is not on a tmpfs")
    _ = FileManager.default.createFile(atPath: path, contents: nil)
    let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: path))
    defer { try? handle.close() }
    let chunk = Data(count: 256 * 1024)
    var written = 0
    while true {
      do {
        try handle.write(contentsOf: chunk)
        written += chunk.count
      } catch {
        break
      }
    }
    // The page cache may hold the last partial chunk: fill what is left byte-wise in small steps.
    for size in [65_536, 4_096, 512, 1] {
      while (try? handle.write(contentsOf: Data(count: size))) != nil { written += size }
    }
    return written
  }

  /// Removes the filler `fillDisk` wrote.
  func freeDisk(_ name: String) {
    try? FileManager.default.removeItem(
      at: slot(name).dataDirectory.appendingPathComponent("disk-full.filler"))
  }

  private func slot(_ name: String) -> ServiceSlot {
    lock.withLock { services[name]! }
  }

  /// Starts a slot's process with stderr appended to its log file (a pipe nobody reads would
  /// fill and block the service) and waits for its readiness.
  private func launch(_ slot: ServiceSlot) async throws {
    if !FileManager.default.fileExists(atPath: slot.logPath) {
      _ = FileManager.default.createFile(atPath: slot.logPath, contents: nil)
    }
    let log = try FileHandle(forWritingTo: URL(fileURLWithPath: slot.logPath))
    defer { try? log.close() }
    try log.seekToEnd()
    // Another process answering on the port would pass the readiness probe for this one.
    let portFree = await eventually(timeout: .seconds(10)) { !LocalPort.accepts(slot.port) }
    try #require(portFree, "port \(slot.port) of \(slot.name) is taken by another process")
    let process = Process()
    process.executableURL = URL(fileURLWithPath: slot.executable.path)
    process.environment = slot.executable.environment
    process.standardOutput = FileHandle.nullDevice
    process.standardError = log
    try process.run()
    lock.withLock { slot.process = process }
    let url = URL(string: "http://127.0.0.1:\(slot.port)/health/ready")!
    let ready = await eventually(timeout: .seconds(60)) {
      guard process.isRunning else { return true }
      guard let (_, response) = try? await URLSession.shared.data(from: url) else { return false }
      return (response as? HTTPURLResponse)?.statusCode == 200
    }
    try #require(ready && process.isRunning, "\(slot.name) did not become ready (log: \(slot.logPath))")
  }

  private func mountTmpfs(at path: String, size: String) throws {
    let status = try Self.run("/bin/mount", ["-t", "tmpfs", "-o", "size=\(size)", "tmpfs", path])
    try #require(status == 0, "mount -t tmpfs failed at \(path) (the disk-full fault needs root)")
    mounts.append(path)
  }

  /// `notify-gateway apns-simulator` on a port of its own, nginx (HTTP/2, TLS) in front, a fresh
  /// provider key; returns the environment that points NotifyGateway's real transport at it.
  private func startAPNsSimulator() async throws -> [String: String] {
    let keys = directory.appendingPathComponent("apns")
    try FileManager.default.createDirectory(at: keys, withIntermediateDirectories: true)
    let key = try ES256Key.generate()
    let privatePath = keys.appendingPathComponent("AuthKey.p8").path
    let publicPath = keys.appendingPathComponent("AuthKey.pub.pem").path
    try key.pemRepresentation.write(toFile: privatePath, atomically: true, encoding: .utf8)
    try key.publicKey.pemRepresentation.write(toFile: publicPath, atomically: true, encoding: .utf8)
    let (keyID, teamID) = ("FAULTKEY01", "FAULTTEAM1")
    let port = try LocalPort.free()
    let executable = try ServiceExecutable(
      "notify-gateway",
      environment: [
        "GROCER_HTTP_PORT": "\(port)", "GROCER_HTTP_HOST": "127.0.0.1",
        "GROCER_APNS_SIM_PUBLIC_KEY": publicPath,
        "GROCER_APNS_KEY_ID": keyID, "GROCER_APNS_TEAM_ID": teamID, "GROCER_JWT_SECRET": secret,
        "GROCER_LOG_LEVEL": "warning",
      ])
    let process = Process()
    process.executableURL = URL(fileURLWithPath: executable.path)
    process.arguments = ["apns-simulator"]
    process.environment = executable.environment
    process.standardOutput = FileHandle.nullDevice
    process.standardError = FileHandle.nullDevice
    try process.run()
    apnsSimulator = process
    let listening = await eventually(timeout: .seconds(20)) { LocalPort.accepts(port) }
    try #require(listening, "the APNs simulator process did not listen on \(port)")
    let front = try await NginxH2Front.start(upstreamPort: port)
    apnsFront = front
    simulatorURL = URL(string: "http://127.0.0.1:\(port)")!
    return [
      "GROCER_APNS_TRANSPORT": "http2", "GROCER_APNS_URL": front.url,
      "GROCER_APNS_CA_FILE": front.certificatePath,
      "GROCER_APNS_KEY_FILE": privatePath, "GROCER_APNS_KEY_ID": keyID, "GROCER_APNS_TEAM_ID": teamID,
    ]
  }

  /// Runs a command to its end; its exit status.
  static func run(_ path: String, _ arguments: [String]) throws -> Int32 {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: path)
    process.arguments = arguments
    process.standardOutput = FileHandle.nullDevice
    process.standardError = FileHandle.nullDevice
    try process.run()
    process.waitUntilExit()
    return process.terminationStatus
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

  /// One request through the gateway: its status, headers (lower-cased names) and body.
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
