import Foundation
import GrocerAMQP
import GrocerAuth
import GrocerRabbitMQ
import GrocerTestSupport

/// Checks the promises after a fault run, from the services' own data (their SQLite databases
/// opened read-only with the `sqlite3` tool, or their PostgreSQL databases read with `psql`; never
/// written) and APIs, against what the client saw.
struct InvariantChecker {
  /// One invariant: how many things it looked at and what it found wrong.
  struct Result: Sendable, Codable {
    var name: String
    var checked: Int
    var violations: [String]
  }

  let system: LocalSystem
  let ledger: FaultLedger.State
  let hub: String
  let skus: [String]
  let initialStock: Int

  private var base: String { system.gateway.absoluteString }

  // MARK: - Reading the services' data

  /// Rows of `sql` against the service's database file, read-only, as JSON objects.
  func rows(_ service: String, _ file: String, _ sql: String) throws -> [[String: Any]] {
    if let url = system.databaseURL(service, file) {
      let json = try TestPostgres.jsonRows(url, sql)
      return (try JSONSerialization.jsonObject(with: Data(json.utf8)) as? [[String: Any]]) ?? []
    }
    let path = system.dataDirectory(service).appendingPathComponent(file).path
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/usr/bin/sqlite3")
    process.arguments = ["-readonly", "-json", "-cmd", ".timeout 5000", path, sql]
    let output = Pipe()
    process.standardOutput = output
    process.standardError = FileHandle.nullDevice
    try process.run()
    let data = output.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    guard process.terminationStatus == 0 else {
      throw CheckFailed(description: "sqlite3 failed on \(path): \(sql)")
    }
    if data.allSatisfy({ $0 == 10 || $0 == 32 }) { return [] }
    return (try JSONSerialization.jsonObject(with: data) as? [[String: Any]]) ?? []
  }

  func count(_ service: String, _ file: String, _ sql: String) throws -> Int {
    try rows(service, file, sql).first?.values.first as? Int ?? 0
  }

  /// Pending pushes for activities that have a token (an update for an order without one waits
  /// for a token until it expires, by design).
  static let pendingWithToken =
    "SELECT count(*) FROM pending p JOIN activities a ON a.order_id = p.order_id WHERE a.token IS NOT NULL"

  struct CheckFailed: Error, CustomStringConvertible { var description: String }

  static let databases = [
    ("stock-service", "stock.sqlite"), ("cart-service", "cart.sqlite"), ("order-service", "order.sqlite"),
    ("tracking-service", "tracking.sqlite"), ("notify-gateway", "notify.sqlite"),
  ]

  /// Queue name → (ready, unacknowledged) for this run's queues.
  static func queueDepths(_ system: LocalSystem) async throws -> [String: (Int, Int)] {
    let queues = system.queues
    let rows = try await system.brokerTable(
      ["list_queues", "-p", system.vhost ?? "/", "name", "messages_ready", "messages_unacknowledged"])
    var depths: [String: (Int, Int)] = [:]
    for fields in rows {
      guard fields.count == 3, queues.contains(fields[0]) else { continue }
      depths[fields[0]] = (Int(fields[1]) ?? -1, Int(fields[2]) ?? -1)
    }
    return depths
  }

  /// Whether the system has come to rest, and still is once the broker's queue statistics have
  /// been refreshed: RabbitMQ emits quorum queues' counts only every 5 s, so a single look can
  /// miss a message in flight (a fault run once checked stock before an `order.confirmed` that
  /// was still waiting in its queue had been applied). Ready counts also come from a passive
  /// declare, which the queue answers itself.
  func settledAndStable() async -> Bool {
    guard await settled() else { return false }
    try? await Task.sleep(for: .seconds(6))
    return await settled()
  }

  /// Whether the system has come to rest: no unfinished order, every outbox sent, no pending
  /// push, no message waiting or unacknowledged.
  func settled() async -> Bool {
    do {
      let unfinished = try count(
        "order-service", "order.sqlite",
        "SELECT count(*) FROM orders WHERE step IN ('received','priced','reserved','charging','needsAction')")
      guard unfinished == 0 else { return false }
      for (service, file) in Self.databases where try count(service, file, "SELECT count(*) FROM outbox") > 0
      {
        return false
      }
      guard try count("notify-gateway", "notify.sqlite", Self.pendingWithToken) == 0 else { return false }
      for queue in system.queueNames.values {
        guard try await AMQPAdmin.messageCount(configuration: system.amqp, queue: queue) == 0 else {
          return false
        }
      }
      let depths = try await Self.queueDepths(system)
      return depths.filter { !$0.key.hasSuffix(".parking") }.values.allSatisfy { $0 == (0, 0) }
    } catch {
      return false
    }
  }

  // MARK: - The invariants

  /// The invariants, and notes that are no violation (repeated pushes of one update: at least once).
  func check() async throws -> (results: [Result], notes: [String: Int]) {
    let orders = try rows(
      "order-service", "order.sqlite", "SELECT order_id, user_id, idempotency_key, status, step FROM orders")
    let attempts = try rows(
      "order-service", "order.sqlite",
      "SELECT user_id, idempotency_key, order_id, response_status FROM attempts")
    let charges = try rows(
      "order-service", "payment-simulator.sqlite",
      "SELECT idempotency_key, payment_id, reference, state FROM charges")
    let reservations = try rows("stock-service", "stock.sqlite", "SELECT order_id, status FROM reservations")
    // A reservation's lines are JSON in its row: one row here per line.
    let reservationLines = try rows(
      "stock-service", "stock.sqlite", "SELECT order_id, CAST(lines AS TEXT) AS lines FROM reservations"
    )
    .flatMap { row -> [[String: Any]] in
      let json = Data((row["lines"] as? String ?? "[]").utf8)
      let lines = (try? JSONSerialization.jsonObject(with: json)) as? [[String: Any]] ?? []
      return lines.map {
        ["order_id": row["order_id"] ?? "", "sku": $0["sku"] ?? "", "quantity": $0["quantity"] ?? 0]
      }
    }
    let products = try rows(
      "stock-service", "stock.sqlite",
      "SELECT sku, on_hand, held FROM products WHERE hub = '\(hub)' AND sku IN (\(skus.map { "'\($0)'" }.joined(separator: ",")))"
    )
    let tracking = try rows(
      "tracking-service", "tracking.sqlite", "SELECT order_id, status, version, la_token FROM tracking")
    let activities = try rows(
      "notify-gateway", "notify.sqlite", "SELECT order_id, token, last_version, ended FROM activities")

    let confirmedInDB = Set(
      orders.filter { $0["status"] as? String == "confirmed" }.compactMap { $0["order_id"] as? String })
    let orderUser = Dictionary(
      orders.compactMap { row in (row["order_id"] as? String).map { ($0, row["user_id"] as? String ?? "") } }
    ) { $1 }
    var results: [Result] = []

    // 1. Every order the client saw confirmed exists once, confirmed, under its key.
    var seen = Result(name: "confirmedOrdersExistOnce", checked: 0, violations: [])
    // A key whose first attempt was given up before any charge (a dependency did not answer) is
    // freed and starts a new order: the abandoned one is no order.
    let live = orders.filter { $0["step"] as? String != "abandoned" }
    let byKey = Dictionary(grouping: live) {
      "\($0["user_id"] as? String ?? "")/\($0["idempotency_key"] as? String ?? "")"
    }
    for order in ledger.confirmed {
      seen.checked += 1
      let rows = orders.filter { $0["order_id"] as? String == order.orderId }
      if rows.count != 1 || rows.first?["status"] as? String != "confirmed" {
        seen.violations.append(
          "\(order.orderId): \(rows.count) rows, status \(rows.first?["status"] ?? "none")")
      }
      if (byKey["\(order.user)/\(order.key)"] ?? []).count != 1 {
        seen.violations.append(
          "\(order.orderId): key \(order.key) has \((byKey["\(order.user)/\(order.key)"] ?? []).count) orders"
        )
      }
      let reply = await FaultHTTP.send(
        "GET", URL(string: "\(base)/v1/orders/\(order.orderId)")!, token: system.token(order.user))
      if reply?.status != 200 || reply?.object["status"] as? String != "confirmed" {
        seen.violations.append("\(order.orderId): GET answered \(reply?.status ?? 0) \(reply?.text ?? "")")
      }
    }
    for (key, rows) in byKey where rows.count > 1 {
      seen.violations.append("key \(key) has \(rows.count) orders")
    }
    results.append(seen)

    // 2. Every confirmed order has exactly one charge; 3. every charge belongs to one confirmed order.
    let approved = charges.filter { $0["state"] as? String == "approved" }
    let chargesByOrder = Dictionary(grouping: approved) { $0["reference"] as? String ?? "" }
    var oneCharge = Result(name: "oneChargePerConfirmedOrder", checked: 0, violations: [])
    for orderId in confirmedInDB.sorted() {
      oneCharge.checked += 1
      let count = chargesByOrder[orderId]?.count ?? 0
      if count != 1 { oneCharge.violations.append("\(orderId): \(count) approved charges") }
    }
    results.append(oneCharge)
    var belongs = Result(name: "everyChargeBelongsToOneConfirmedOrder", checked: 0, violations: [])
    for charge in charges {
      belongs.checked += 1
      let reference = charge["reference"] as? String ?? ""
      let state = charge["state"] as? String ?? ""
      if state == "approved", !confirmedInDB.contains(reference) {
        let status =
          orders.first { $0["order_id"] as? String == reference }?["status"] as? String ?? "no order"
        belongs.violations.append(
          "charge \(charge["payment_id"] ?? "") approved for \(reference) (\(status))")
      }
      if state == "processing" || state == "requiresAction" {
        belongs.violations.append("charge \(charge["payment_id"] ?? "") for \(reference) left \(state)")
      }
    }
    results.append(belongs)

    // 4. Every key answered the same way every time (and still does).
    var keys = Result(name: "everyKeyAnsweredTheSameWay", checked: 0, violations: [])
    for record in ledger.keys.values.sorted(by: { $0.key < $1.key }) {
      keys.checked += 1
      let distinct = Set(record.answers)
      if distinct.count > 1 {
        keys.violations.append("\(record.key): \(distinct.map(\.description).sorted())")
      }
      let known = distinct.first?.orderId
      let dbOrder =
        attempts.first {
          $0["user_id"] as? String == record.user && $0["idempotency_key"] as? String == record.key
        }?["order_id"] as? String
      for pending in record.pendingOrderIds where pending != (known ?? dbOrder) {
        keys.violations.append("\(record.key): 202 named \(pending), later \(known ?? dbOrder ?? "nothing")")
      }
      if let known, let dbOrder, known != dbOrder {
        keys.violations.append("\(record.key): answered \(known), recorded \(dbOrder)")
      }
      // Asked again now, the key replays what it answered (or, never answered, what it became).
      let reply = await FaultHTTP.send(
        "POST", URL(string: "\(base)/v1/orders")!, token: system.token(record.user), json: record.body,
        headers: ["Idempotency-Key": record.key], timeout: 15)
      guard let reply else {
        keys.violations.append("\(record.key): no answer to the final replay")
        continue
      }
      let object = reply.object
      let now = FaultLedger.Answer(
        status: reply.status, orderId: object["orderId"] as? String,
        orderStatus: object["status"] as? String ?? object["code"] as? String)
      if let first = distinct.first, now != first {
        keys.violations.append("\(record.key): first \(first), now \(now)")
      } else if distinct.isEmpty, now.orderId != nil, now.orderId != dbOrder {
        keys.violations.append("\(record.key): never answered, now \(now), recorded \(dbOrder ?? "nothing")")
      }
    }
    results.append(keys)

    // 5. Every confirmed order reserved and committed its stock once; nothing else is committed
    //    or still held.
    var reserved = Result(name: "confirmedOrdersReservedAndCommittedOnce", checked: 0, violations: [])
    let reservationStatus = Dictionary(
      reservations.compactMap { row in
        (row["order_id"] as? String).map { ($0, row["status"] as? String ?? "") }
      }
    ) { $1 }
    let linesByOrder = Dictionary(grouping: reservationLines) { $0["order_id"] as? String ?? "" }
    for orderId in confirmedInDB.sorted() {
      reserved.checked += 1
      if reservationStatus[orderId] != "committed" {
        reserved.violations.append("\(orderId): reservation \(reservationStatus[orderId] ?? "missing")")
      }
      let reply = await FaultHTTP.send(
        "GET", URL(string: "\(base)/v1/orders/\(orderId)")!, token: system.token(orderUser[orderId] ?? ""))
      let ordered = ((reply?.object["lines"] as? [[String: Any]]) ?? []).reduce(into: [String: Int]()) {
        $0[$1["sku"] as? String ?? ""] = $1["quantity"] as? Int ?? 0
      }
      let held = (linesByOrder[orderId] ?? []).reduce(into: [String: Int]()) {
        $0[$1["sku"] as? String ?? ""] = $1["quantity"] as? Int ?? 0
      }
      if ordered.isEmpty || ordered != held {
        reserved.violations.append("\(orderId): ordered \(ordered), reserved \(held)")
      }
    }
    for (orderId, status) in reservationStatus {
      if status == "committed", !confirmedInDB.contains(orderId) {
        reserved.violations.append("\(orderId): committed but the order is not confirmed")
      }
      if status == "held" { reserved.violations.append("\(orderId): still held after the run settled") }
    }
    results.append(reserved)

    // 6. Stock counts equal the initial count minus what confirmed orders committed.
    var stock = Result(name: "stockEqualsInitialMinusCommitted", checked: 0, violations: [])
    var committed: [String: Int] = [:]
    var held: [String: Int] = [:]
    for line in reservationLines {
      let orderId = line["order_id"] as? String ?? ""
      let sku = line["sku"] as? String ?? ""
      let quantity = line["quantity"] as? Int ?? 0
      if reservationStatus[orderId] == "committed" { committed[sku, default: 0] += quantity }
      if reservationStatus[orderId] == "held" { held[sku, default: 0] += quantity }
    }
    let api = await FaultHTTP.send(
      "GET", URL(string: "\(base)/v1/hubs/\(hub)/stock?ids=\(skus.joined(separator: ","))")!)
    let available = (api?.object["stock"] as? [String: Int]) ?? [:]
    for product in products {
      stock.checked += 1
      let sku = product["sku"] as? String ?? ""
      let onHand = product["on_hand"] as? Int ?? -1
      let heldNow = product["held"] as? Int ?? -1
      if onHand != initialStock - committed[sku, default: 0] {
        stock.violations.append(
          "\(sku): on hand \(onHand), expected \(initialStock) − \(committed[sku, default: 0])")
      }
      if heldNow != held[sku, default: 0] {
        stock.violations.append("\(sku): held \(heldNow), open reservations hold \(held[sku, default: 0])")
      }
      if available[sku] != onHand - heldNow {
        stock.violations.append(
          "\(sku): the API says \(available[sku].map(String.init) ?? "nothing"), the data \(onHand - heldNow)"
        )
      }
    }
    if products.count != skus.count {
      stock.violations.append("\(products.count) of \(skus.count) products found")
    }
    results.append(stock)

    // 7. Carts: emptied after each confirmed order, acknowledged writes kept (seen by the client).
    let carts = ledger.anomalies["cartsEmptiedOnceAndKeepTheirWrites"] ?? []
    results.append(
      Result(
        name: "cartsEmptiedOnceAndKeepTheirWrites",
        checked: ledger.counters["checkouts", default: 0] + ledger.confirmed.count, violations: carts))

    // 8. Every confirmed order created its tracking once; driven orders are where the courier left them.
    var created = Result(
      name: "trackingCreatedOnce", checked: 0, violations: ledger.anomalies["trackingCreatedOnce"] ?? [])
    let trackingByOrder = Dictionary(grouping: tracking) { $0["order_id"] as? String ?? "" }
    for orderId in confirmedInDB.sorted() {
      created.checked += 1
      let rows = trackingByOrder[orderId] ?? []
      if rows.count != 1 { created.violations.append("\(orderId): \(rows.count) tracking rows") }
    }
    // The system runs in a vhost of its own: no other test's events reach it.
    for (orderId, _) in trackingByOrder where !confirmedInDB.contains(orderId) {
      created.violations.append("\(orderId): tracked but not confirmed")
    }
    for driven in ledger.driven where driven.delivered {
      let row = trackingByOrder[driven.orderId]?.first
      if row?["status"] as? String != "delivered" || row?["version"] as? Int != driven.lastVersion {
        created.violations.append(
          "\(driven.orderId): tracking \(row?["status"] ?? "none") v\(row?["version"] ?? "?"), the courier saw delivered v\(driven.lastVersion)"
        )
      }
    }
    results.append(created)

    // 9. Every tracking change reached the gateway; 10. no activity got an older update after a newer one.
    var reached = Result(
      name: "trackingChangesReachedTheGateway", checked: 0,
      violations: ledger.anomalies["trackingReachedGateway"] ?? [])
    var ordered = Result(name: "noActivityGotAnOlderUpdateAfterANewerOne", checked: 0, violations: [])
    let activityByOrder = Dictionary(grouping: activities) { $0["order_id"] as? String ?? "" }
    let staff = system.token("fault-ops", role: .staff, hubs: ["*"])
    var duplicates = 0
    for driven in ledger.driven {
      reached.checked += 1
      let activity = activityByOrder[driven.orderId]?.first
      let version = trackingByOrder[driven.orderId]?.first?["version"] as? Int ?? -1
      let record = await FaultHTTP.send(
        "GET", system.simulatorURL.appendingPathComponent("v1/sim/devices/\(driven.token)"), token: staff)
      let answered = (record?.object["pushes"] as? [[String: Any]]) ?? []
      if activity?["token"] as? String != driven.token || activity?["last_version"] as? Int != version {
        // Every push APNs answered for the activity, refused ones too, and whether the gateway
        // ended it: a version that never reached the gateway shows no attempt at all.
        let tried = answered.map { push -> String in
          let aps = (push["payload"] as? [String: Any])?["aps"] as? [String: Any]
          let state = (aps?["content-state"] as? [String: Any])?["status"] as? String
          return "\(push["status"] ?? "?") \(aps?["event"] ?? "?") \(state ?? "?")"
        }
        let token =
          (activity?["token"] as? String).map { $0 == driven.token ? "the app's" : "another" } ?? "none"
        let pending =
          (try? rows(
            "notify-gateway", "notify.sqlite",
            "SELECT version FROM pending WHERE order_id = '\(driven.orderId)'"
          ))?.first?["version"].map { "v\($0)" } ?? "none"
        reached.violations.append(
          "\(driven.orderId): the gateway handled v\(activity?["last_version"] ?? "none"), tracking is at v\(version) (token \(token), ended \(activity?["ended"] ?? "?"), pending \(pending); answered pushes: \(tried))"
        )
      }
      let pushes = answered.filter { $0["status"] as? Int == 200 }
      let aps = pushes.compactMap { ($0["payload"] as? [String: Any])?["aps"] as? [String: Any] }
      let stamps = aps.compactMap { $0["timestamp"] as? Int }
      ordered.checked += 1
      for (older, newer) in zip(stamps, stamps.dropFirst()) where newer < older {
        ordered.violations.append("\(driven.orderId): timestamp \(newer) after \(older) (\(stamps))")
      }
      duplicates += zip(stamps, stamps.dropFirst()).filter { $0 == $1 }.count
      if driven.delivered {
        let last = aps.last
        let status = (last?["content-state"] as? [String: Any])?["status"] as? String
        if last?["event"] as? String != "end" || status != "delivered" {
          reached.violations.append(
            "\(driven.orderId): the last push was \(last?["event"] ?? "none") \(status ?? "") (\(pushes.count) pushes)"
          )
        }
      }
    }
    results.append(reached)
    results.append(ordered)

    // 11. No message sits unacknowledged, no event waits in an outbox; 12. the parking queues are empty.
    var acked = Result(name: "noMessageUnacknowledgedOrUnsent", checked: 0, violations: [])
    var parked = Result(name: "parkingQueuesEmpty", checked: 0, violations: [])
    let depths = try await Self.queueDepths(system)
    for queue in system.queues {
      // A queue nobody declared (OrderService consumes no events) holds nothing.
      guard let (ready, unacked) = depths[queue] else { continue }
      if queue.hasSuffix(".parking") {
        parked.checked += 1
        if ready + unacked > 0 { parked.violations.append("\(queue): \(ready) ready, \(unacked) unacked") }
      } else {
        acked.checked += 1
        if ready + unacked > 0 { acked.violations.append("\(queue): \(ready) ready, \(unacked) unacked") }
      }
    }
    for (service, file) in Self.databases {
      acked.checked += 1
      let backlog = try count(service, file, "SELECT count(*) FROM outbox")
      if backlog > 0 { acked.violations.append("\(service): \(backlog) events never sent") }
    }
    let pending = try count("notify-gateway", "notify.sqlite", Self.pendingWithToken)
    if pending > 0 { acked.violations.append("notify-gateway: \(pending) pushes still pending") }
    results.append(acked)
    results.append(parked)
    return (
      results,
      [
        "repeatedPushesOfOneUpdate": duplicates, "approvedCharges": approved.count,
        "confirmedOrdersInOrderService": confirmedInDB.count,
      ]
    )
  }
}
