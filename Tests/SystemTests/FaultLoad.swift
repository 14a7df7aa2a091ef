import Foundation
import GrocerAuth
import GrocerCore
import GrocerTestSupport
import Synchronization

#if canImport(FoundationNetworking)
  import FoundationNetworking
#endif

/// The fault run's size, read from the environment. The defaults are the short run CI does;
/// `make faults` sets the long one.
struct FaultPlan: Sendable, Codable {
  /// How long the mixed load runs (`GROCER_FAULTS_SECONDS`).
  var seconds: Double
  /// How many times each of the five services is killed with SIGKILL (`GROCER_FAULTS_KILLS`).
  var killsPerService: Int
  /// RabbitMQ restarts (`GROCER_FAULTS_BROKER_RESTARTS`): `stop_app` / `start_app` (the
  /// application inside the running node), or with `GROCER_FAULTS_BROKER_RESTART=node` the whole
  /// node stopped and started again (`deploy/local/rabbitmq.sh stop` / `start`: every process of
  /// the broker gone, queues recovered from disk).
  var brokerRestarts: Int
  var restartsWholeNode: Bool
  /// On the tests' three-node cluster (`GROCER_FAULTS_BROKER=cluster`): each broker fault is a
  /// SIGKILL of one node, brought back 3 s later, every node at least once (3 by default).
  var cluster: Bool
  /// Disk-full episodes (`GROCER_FAULTS_DISK_FULL`) of `diskFullSeconds` each
  /// (`GROCER_FAULTS_DISK_FULL_SECONDS`) on `diskFullService`'s tmpfs (`GROCER_FAULTS_DISK_SERVICE`).
  var diskFullEpisodes: Int
  var diskFullSeconds: Double
  var diskFullService: String
  /// PostgreSQL fast shutdowns and starts (`GROCER_FAULTS_DB_RESTARTS`), on PostgreSQL only.
  var databaseRestarts: Int
  /// Processes per service (`GROCER_FAULTS_REPLICAS`), PostgreSQL only.
  var replicas: Int
  /// Concurrent customers (`GROCER_FAULTS_CUSTOMERS`) and staff/rider drivers (`GROCER_FAULTS_COURIERS`).
  var customers: Int
  var couriers: Int
  /// The fault schedule's seed (`GROCER_FAULTS_SEED`; random unless given, printed in the report).
  var seed: UInt64

  /// On PostgreSQL (`engine`), two replicas of each service, a restart of the database server,
  /// and no disk-full episode (the services' data is not on their disk).
  init(environment: [String: String] = ProcessInfo.processInfo.environment, engine: TestEngine = .selected) {
    func number(_ name: String, _ fallback: Double) -> Double {
      environment[name].flatMap(Double.init) ?? fallback
    }
    seconds = max(5, number("GROCER_FAULTS_SECONDS", 25))
    killsPerService = max(0, Int(number("GROCER_FAULTS_KILLS", 1)))
    cluster = environment["GROCER_FAULTS_BROKER"] == "cluster"
    brokerRestarts = max(0, Int(number("GROCER_FAULTS_BROKER_RESTARTS", cluster ? 3 : 1)))
    restartsWholeNode = environment["GROCER_FAULTS_BROKER_RESTART"] == "node"
    let postgres = engine == .postgres
    diskFullEpisodes = postgres ? 0 : max(0, Int(number("GROCER_FAULTS_DISK_FULL", 1)))
    databaseRestarts = postgres ? max(0, Int(number("GROCER_FAULTS_DB_RESTARTS", 1))) : 0
    replicas = postgres ? min(9, max(1, Int(number("GROCER_FAULTS_REPLICAS", 2)))) : 1
    diskFullSeconds = max(1, number("GROCER_FAULTS_DISK_FULL_SECONDS", 5))
    diskFullService = environment["GROCER_FAULTS_DISK_SERVICE"] ?? "order-service"
    customers = max(1, Int(number("GROCER_FAULTS_CUSTOMERS", 6)))
    couriers = max(1, Int(number("GROCER_FAULTS_COURIERS", 3)))
    seed = environment["GROCER_FAULTS_SEED"].flatMap(UInt64.init) ?? UInt64.random(in: 1...UInt64.max)
  }
}

/// One HTTP answer; `nil` from `FaultHTTP.send` means no answer at all (refused, reset, time-out).
struct FaultReply: Sendable {
  var status: Int
  var body: Data
  var headers: [String: String]

  var object: [String: Any] { (try? JSONSerialization.jsonObject(with: body)) as? [String: Any] ?? [:] }
  var text: String { String(decoding: body.prefix(300), as: UTF8.self) }
}

/// HTTP for the load: a session of its own with short time-outs, so a killed service shows as a
/// failed call instead of a hang.
enum FaultHTTP {
  static let session: URLSession = {
    let configuration = URLSessionConfiguration.ephemeral
    configuration.timeoutIntervalForRequest = 10
    configuration.timeoutIntervalForResource = 15
    configuration.httpMaximumConnectionsPerHost = 64
    return URLSession(configuration: configuration)
  }()

  static func send(
    _ method: String, _ url: URL, token: String? = nil, json: Data? = nil, headers: [String: String] = [:],
    timeout: TimeInterval = 10
  ) async -> FaultReply? {
    var request = URLRequest(url: url)
    request.httpMethod = method
    request.timeoutInterval = timeout
    if let token { request.setValue("Bearer \(token)", forHTTPHeaderField: "Authorization") }
    if let json {
      request.httpBody = json
      request.setValue("application/json", forHTTPHeaderField: "Content-Type")
    }
    for (name, value) in headers { request.setValue(value, forHTTPHeaderField: name) }
    guard let (data, response) = try? await session.data(for: request),
      let http = response as? HTTPURLResponse
    else { return nil }
    var fields: [String: String] = [:]
    for (name, value) in http.allHeaderFields {
      if let name = name as? String, let value = value as? String { fields[name.lowercased()] = value }
    }
    return FaultReply(status: http.statusCode, body: data, headers: fields)
  }

  static func json(_ value: [String: Any]) -> Data {
    (try? JSONSerialization.data(withJSONObject: value)) ?? Data()
  }
}

/// What the client saw during the run: the ground truth the invariants are checked against.
final class FaultLedger: Sendable {
  /// A definitive answer to `POST /v1/orders` (not a 5xx, time-out, 202 or `requestInProgress`).
  struct Answer: Sendable, Hashable, Codable, CustomStringConvertible {
    var status: Int
    var orderId: String?
    var orderStatus: String?
    var description: String { "\(status) \(orderStatus ?? "-") \(orderId ?? "-")" }
  }

  /// Everything one idempotency key was answered.
  struct KeyRecord: Sendable, Codable {
    var user: String
    var key: String
    var body: Data
    var answers: [Answer] = []
    /// Order ids named by 202 `pending` answers.
    var pendingOrderIds: Set<String> = []
  }

  struct ConfirmedOrder: Sendable, Codable {
    var orderId: String
    var user: String
    var key: String
  }

  /// An order a courier drove: its Live Activity token and the last tracking version it saw.
  struct DrivenOrder: Sendable, Codable {
    var orderId: String
    var user: String
    var token: String
    var lastVersion: Int
    var delivered: Bool
  }

  struct State: Sendable {
    var counters: [String: Int] = [:]
    var keys: [String: KeyRecord] = [:]
    var confirmed: [ConfirmedOrder] = []
    var toDrive: [ConfirmedOrder] = []
    var driven: [DrivenOrder] = []
    /// Problems the client saw at once (a cart that lost lines, a cart never emptied, …).
    var anomalies: [String: [String]] = [:]
    /// When each `POST /v1/orders` that placed an order (201) was sent and answered.
    var placements: [(sent: ContinuousClock.Instant, answered: ContinuousClock.Instant)] = []
  }

  let state = Mutex(State())

  func count(_ name: String, _ by: Int = 1) { state.withLock { $0.counters[name, default: 0] += by } }
  func anomaly(_ invariant: String, _ text: String) {
    state.withLock { $0.anomalies[invariant, default: []].append(text) }
  }
  var snapshot: State { state.withLock { $0 } }

  /// How long after `instant` the first order whose POST was sent after it was placed: how long
  /// checkout was unavailable from then on (nil: none was placed).
  func firstPlacement(after instant: ContinuousClock.Instant) -> Duration? {
    state.withLock { state in
      state.placements.filter { $0.sent >= instant }.map { $0.answered - instant }.min()
    }
  }
}

/// The steady mixed load: customers fill carts and check out with retries on the same key;
/// couriers (staff and riders) take confirmed orders through tracking to `delivered` after
/// registering a Live Activity token, whose pushes the APNs simulator records.
struct FaultLoad: Sendable {
  let system: LocalSystem
  let ledger: FaultLedger
  let plan: FaultPlan
  let hub: String
  let skus: [String]
  let stopAt: ContinuousClock.Instant
  /// How long one checkout may keep retrying its key before the client gives up (and asks by key).
  var checkoutPatience: Duration = .seconds(45)

  private var base: String { system.gateway.absoluteString }

  func run() async {
    await withTaskGroup(of: Void.self) { group in
      for index in 0..<plan.customers { group.addTask { await self.customer(index) } }
      for index in 0..<plan.couriers { group.addTask { await self.courier(index) } }
    }
  }

  // MARK: - Customers

  private func customer(_ index: Int) async {
    let user = "fault-\(index)-\(UUID().uuidString.prefix(6).lowercased())"
    let token = system.token(user)
    var random = SystemRandomNumberGenerator()
    while ContinuousClock.now < stopAt {
      // Fill the cart: final quantities of two or three products.
      var wanted: [String: Int] = [:]
      for sku in skus.shuffled(using: &random).prefix(Int.random(in: 2...3, using: &random)) {
        wanted[sku] = Int.random(in: 1...4, using: &random)
      }
      guard await fill(wanted, token: token, user: user) else {
        try? await Task.sleep(for: .milliseconds(300))
        continue
      }
      guard var cart = await readCart(token) else { continue }
      // Below the hub's minimum order: more of the first line until it passes.
      var raised = 0
      while let blocker = cart["blocker"] as? [String: Any], blocker["kind"] as? String == "belowMinimum",
        raised < 5, let sku = wanted.keys.sorted().first
      {
        wanted[sku] = min(99, (wanted[sku] ?? 1) * 2 + 2)
        raised += 1
        guard await fill([sku: wanted[sku]!], token: token, user: user), let again = await readCart(token)
        else {
          break
        }
        cart = again
      }
      guard cart["blocker"] is NSNull || cart["blocker"] == nil, let version = cart["version"] as? Int else {
        continue
      }
      // Acknowledged writes are still there (a lost write or a second emptying would show here).
      let lines = (cart["lines"] as? [[String: Any]]) ?? []
      let held = Dictionary(
        lines.compactMap { line in (line["sku"] as? String).map { ($0, line["quantity"] as? Int ?? 0) } }
      ) { $1 }
      for (sku, quantity) in wanted where held[sku] != quantity {
        ledger.anomaly(
          "cartsEmptiedOnceAndKeepTheirWrites",
          "\(user): \(sku) acknowledged at \(quantity), the cart shows \(held[sku].map(String.init) ?? "nothing")"
        )
      }
      await checkout(
        user: user, token: token, cartVersion: version, decline: Int.random(in: 0..<10, using: &random) == 0)
      try? await Task.sleep(for: .milliseconds(100))
    }
  }

  /// Puts each final quantity; true when every one was acknowledged with 200.
  private func fill(_ wanted: [String: Int], token: String, user: String) async -> Bool {
    for (sku, quantity) in wanted.sorted(by: { $0.key < $1.key }) {
      ledger.count("cartWrites")
      let reply = await FaultHTTP.send(
        "PUT", URL(string: "\(base)/v1/hubs/\(hub)/cart/items/\(sku)")!, token: token,
        json: FaultHTTP.json(["quantity": quantity]), timeout: 5)
      guard reply?.status == 200 else {
        ledger.count("cartWritesFailed")
        return false
      }
    }
    return true
  }

  private func readCart(_ token: String) async -> [String: Any]? {
    ledger.count("cartReads")
    guard
      let reply = await FaultHTTP.send(
        "GET", URL(string: "\(base)/v1/hubs/\(hub)/cart")!, token: token, timeout: 5),
      reply.status == 200
    else {
      ledger.count("cartReadsFailed")
      return nil
    }
    return reply.object
  }

  private func checkout(user: String, token: String, cartVersion: Int, decline: Bool) async {
    let key = UUID().uuidString
    let body = FaultHTTP.json([
      "hub": hub, "cartVersion": cartVersion,
      "payment": ["method": "applePay", "token": decline ? "sim-decline" : "tok-fault"],
      "deliverTo": ["lat": 52.5155, "lng": 13.4540],
    ])
    ledger.state.withLock { $0.keys[key] = FaultLedger.KeyRecord(user: user, key: key, body: body) }
    ledger.count("checkouts")
    guard let answer = await place(key: key, body: body, token: token) else {
      ledger.count("checkoutsUnresolved")
      return
    }
    switch (answer.status, answer.orderStatus) {
    case (201, "confirmed"):
      guard let orderId = answer.orderId else { return }
      ledger.count("ordersConfirmed")
      let order = FaultLedger.ConfirmedOrder(orderId: orderId, user: user, key: key)
      ledger.state.withLock {
        $0.confirmed.append(order)
        $0.toDrive.append(order)
      }
      // Now and then the client resends a key it already has an answer for.
      if Int.random(in: 0..<5) == 0 { _ = await place(key: key, body: body, token: token) }
      // The confirmed order empties the cart (by event): wait for it before filling it again.
      let emptied = await waitUntil(.seconds(30)) {
        guard let cart = await readCart(token) else { return false }
        return ((cart["lines"] as? [[String: Any]]) ?? []).isEmpty
      }
      if !emptied {
        ledger.anomaly(
          "cartsEmptiedOnceAndKeepTheirWrites", "\(user): order \(orderId) never emptied the cart")
      }
    case (402, _): ledger.count("ordersDeclined")
    case (409, _): ledger.count("ordersCartChanged")
    default: ledger.count("ordersOtherAnswer")
    }
  }

  /// Sends the key until a definitive answer, retrying on no answer, 5xx, 202 and 409
  /// `requestInProgress`, as a client that never gets an answer must.
  private func place(key: String, body: Data, token: String) async -> FaultLedger.Answer? {
    let deadline = ContinuousClock.now + checkoutPatience
    var attempt = 0
    while ContinuousClock.now < deadline {
      attempt += 1
      ledger.count("orderPosts")
      if attempt > 1 { ledger.count("orderRetries") }
      let sent = ContinuousClock.now
      let reply = await FaultHTTP.send(
        "POST", URL(string: "\(base)/v1/orders")!, token: token, json: body,
        headers: ["Idempotency-Key": key],
        timeout: 12)
      guard let reply else {
        ledger.count("orderPostsNoAnswer")
        try? await Task.sleep(for: .milliseconds(500))
        continue
      }
      let object = reply.object
      let orderId = object["orderId"] as? String
      let code = object["code"] as? String
      if reply.status >= 500 || reply.status == 429 {
        ledger.count("orderPosts\(reply.status)")
        try? await Task.sleep(for: .milliseconds(500))
        continue
      }
      if reply.status == 202 {
        ledger.count("orderPostsPending")
        if let orderId { ledger.state.withLock { _ = $0.keys[key]?.pendingOrderIds.insert(orderId) } }
        try? await Task.sleep(for: .seconds(1))
        continue
      }
      if reply.status == 409, code == "requestInProgress" {
        ledger.count("orderPostsInProgress")
        try? await Task.sleep(for: .milliseconds(700))
        continue
      }
      if reply.headers["idempotent-replayed"] == "true" { ledger.count("orderReplays") }
      if reply.status == 201 {
        ledger.state.withLock { $0.placements.append((sent, ContinuousClock.now)) }
      }
      let answer = FaultLedger.Answer(
        status: reply.status, orderId: orderId, orderStatus: object["status"] as? String ?? code)
      ledger.state.withLock { $0.keys[key]?.answers.append(answer) }
      return answer
    }
    return nil
  }

  // MARK: - Couriers

  private func courier(_ index: Int) async {
    let staff = system.token("fault-staff-\(index)", role: .staff, hubs: [hub])
    let riderId = "fault-rider-\(index)"
    let rider = system.token(riderId, role: .rider)
    while ContinuousClock.now < stopAt {
      let next = ledger.state.withLock { $0.toDrive.isEmpty ? nil : $0.toDrive.removeFirst() }
      guard let order = next else {
        try? await Task.sleep(for: .milliseconds(200))
        continue
      }
      await drive(order, staff: staff, riderId: riderId, rider: rider)
    }
  }

  private func drive(_ order: FaultLedger.ConfirmedOrder, staff: String, riderId: String, rider: String) async
  {
    let customer = system.token(order.user)
    let trackingURL = URL(string: "\(base)/v1/orders/\(order.orderId)/tracking")!
    let exists = await waitUntil(.seconds(60)) {
      await FaultHTTP.send("GET", trackingURL, token: customer, timeout: 5)?.status == 200
    }
    guard exists else {
      ledger.anomaly("trackingCreatedOnce", "\(order.orderId): no tracking within 60 s of confirmation")
      return
    }
    let activity = (0..<80).map { _ in String(format: "%02x", UInt8.random(in: 0...255)) }.joined()
    let registered = await waitUntil(.seconds(60)) {
      ledger.count("liveActivityTokenPuts")
      let reply = await FaultHTTP.send(
        "PUT", URL(string: "\(base)/v1/orders/\(order.orderId)/live-activity-token")!, token: customer,
        json: FaultHTTP.json(["token": activity]), timeout: 5)
      return reply.map { (200..<300).contains($0.status) } ?? false
    }
    guard registered else { return }
    var driven = FaultLedger.DrivenOrder(
      orderId: order.orderId, user: order.user, token: activity, lastVersion: 0, delivered: false)
    let steps: [(token: String, path: String, body: [String: Any], status: String?)] = [
      (staff, "status", ["status": "picking"], "picking"),
      (staff, "status", ["status": "onTheWay", "rider": ["id": riderId, "firstName": "Ana"]], "onTheWay"),
      (
        rider, "rider",
        ["lat": 52.52, "lng": 13.45, "recordedAt": ISO8601DateFormatter().string(from: Date())], nil
      ),
      (rider, "status", ["status": "arriving"], "arriving"),
      (rider, "status", ["status": "delivered"], "delivered"),
    ]
    var finished = true
    for step in steps {
      let done = await waitUntil(.seconds(60)) {
        ledger.count("trackingChanges")
        let reply = await FaultHTTP.send(
          "POST", URL(string: "\(base)/v1/orders/\(order.orderId)/\(step.path)")!, token: step.token,
          json: FaultHTTP.json(step.body), timeout: 5)
        if let reply, reply.status == 200 {
          driven.lastVersion = max(driven.lastVersion, reply.object["version"] as? Int ?? 0)
          return true
        }
        ledger.count("trackingChangesFailed")
        // No answer: the change may have been made. Read before trying again.
        guard let now = await FaultHTTP.send("GET", trackingURL, token: customer, timeout: 5),
          now.status == 200
        else { return false }
        let current = now.object
        let reached =
          step.status.map { current["status"] as? String == $0 }
          ?? ((current["rider"] as? [String: Any])?["lat"] != nil)
        if reached { driven.lastVersion = max(driven.lastVersion, current["version"] as? Int ?? 0) }
        return reached
      }
      guard done else {
        ledger.anomaly(
          "trackingReachedGateway", "\(order.orderId): could not move to \(step.status ?? "a rider fix")")
        finished = false
        break
      }
      try? await Task.sleep(for: .milliseconds(150))
    }
    driven.delivered = finished
    ledger.state.withLock { $0.driven.append(driven) }
  }

  private func waitUntil(_ timeout: Duration, _ condition: () async -> Bool) async -> Bool {
    let deadline = ContinuousClock.now + timeout
    while ContinuousClock.now < deadline {
      if await condition() { return true }
      try? await Task.sleep(for: .milliseconds(400))
    }
    return false
  }
}
