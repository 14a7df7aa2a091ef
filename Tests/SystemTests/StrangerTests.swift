import Foundation
import GrocerAuth
import GrocerContracts
import GrocerCore
import GrocerTestSupport
import Testing

/// Strangers against the whole system, through the gateway: every protected endpoint with no
/// token, an expired one, one signed with another key, `alg: none` and garbage (401 with
/// `WWW-Authenticate: Bearer`); customers on staff endpoints, staff of another hub and riders on
/// orders not theirs; and customer B asking for customer A's cart, order, key, tracking and
/// devices (404, exactly as if it did not exist). Each row is checked for its status, a problem
/// body, and that not a byte of A's data comes back to anyone but A.
@Suite(.serialized) struct StrangerTests {
  let hub = "h3"
  let first = "p00011"
  let second = "p00012"

  /// Who calls.
  enum Caller: String, CaseIterable, Sendable {
    case noToken, expired, foreignKey, algNone, garbage
    case customerA, customerB, staff, staffOfAnotherHub, rider, otherRider

    /// The callers whose token is not a valid one.
    static let invalid: [Caller] = [.noToken, .expired, .foreignKey, .algNone, .garbage]
    /// Callers who must never see A's data.
    var isStranger: Bool { ![.customerA, .staff, .rider].contains(self) }
  }

  /// One request and the statuses it may get.
  struct Row: Sendable, CustomStringConvertible {
    var caller: Caller
    var method: String
    var path: String
    var body: [String: any Sendable]?
    var headers: [String: String] = [:]
    var expected: Set<Int>
    /// Whether an error reply must be `application/problem+json` (a 409 `cartChanged` is an
    /// answer carrying the caller's own cart, SPEC.md).
    var problem = true
    var description: String { "\(caller.rawValue) \(method) \(path)" }
  }

  /// What customer A owns, made through the API before the matrix runs.
  struct Owned {
    var customerA: String
    var orderId: String
    var idempotencyKey: String
    var activityToken: String
    var deviceToken: String
    /// Strings that must never reach a stranger.
    var secrets: [String] { [customerA, orderId, idempotencyKey, activityToken, deviceToken] }
  }

  @Test func everyEndpointRefusesStrangersAndShowsThemNothingOfAnotherUsers() async throws {
    // At `debug`, so the logs below hold everything the services would ever log of a request.
    let system = try await LocalSystem.start(LocalSystem.Options(logLevel: "debug"))
    let run = String(UUID().uuidString.prefix(6)).lowercased()
    let tokens = self.tokens(system, run: run)
    var logs: [String: String] = [:]
    try await withCleanup({ logs = await system.stop() }) {
      let owned = try await prepare(system, tokens: tokens, run: run)
      let stockBefore = try await available(system, first)

      var failures: [String] = []
      for row in rows(owned) {
        let reply = try await system.send(
          row.method, row.path, token: row.caller == .noToken ? nil : tokens[row.caller],
          json: row.body, headers: row.headers)
        let text = String(decoding: reply.body, as: UTF8.self)
        if !row.expected.contains(reply.status) {
          failures.append("\(row): \(reply.status), expected \(row.expected.sorted()): \(text.prefix(200))")
        }
        if reply.status == 401, !(reply.headers["www-authenticate"] ?? "").hasPrefix("Bearer") {
          failures.append("\(row): 401 without WWW-Authenticate: Bearer")
        }
        if row.problem, reply.status >= 400,
          !(reply.headers["content-type"] ?? "").contains("application/problem+json")
        {
          failures.append(
            "\(row): \(reply.status) is not a problem (\(reply.headers["content-type"] ?? "-")): \(text)")
        }
        if row.caller.isStranger {
          // What the stranger sent (an order id in the path, say) may come back; nothing else.
          let sent = "\(row.path) \(row.headers.values.joined(separator: " "))"
          for secret in owned.secrets where text.contains(secret) && !sent.contains(secret) {
            failures.append("\(row): the reply shows A's \(secret)")
          }
        }
      }
      #expect(
        failures.isEmpty,
        "\(failures.count) of \(rows(owned).count) rows:\n\(failures.joined(separator: "\n"))")

      // Nothing the strangers tried changed anything.
      #expect(try await available(system, first) == stockBefore)
      let order = try await system.call("GET", "/v1/orders/\(owned.orderId)", token: tokens[.customerA])
      #expect(order.status == 200)
      let cart = try await system.call("GET", "/v1/hubs/\(hub)/cart", token: tokens[.customerA])
      #expect(String(decoding: cart.body, as: UTF8.self).contains(second))
    }
    // No secret reached a log: no token (valid or not), nor its signature alone, nor the
    // signing secret, nor a payment token.
    #expect(logs.count == LocalSystem.names.count)
    #expect(logs.values.contains { $0.contains("\"level\":\"debug\"") }, "the services did not log at debug")
    var secrets = [
      "signing secret": system.secret, "payment token": "tok_a", "stranger's payment token": "tok_stranger",
    ]
    for (caller, token) in tokens {
      secrets["\(caller) token"] = token
      if let signature = token.split(separator: ".", omittingEmptySubsequences: false).last,
        signature.count > 8
      {
        secrets["\(caller) signature"] = String(signature)
      }
    }
    for (service, log) in logs {
      for (what, secret) in secrets where log.contains(secret) {
        Issue.record("\(service) logged the \(what)")
      }
    }
  }

  /// The gateway limits each user (bearer token): past the burst, 429 with `Retry-After` and a
  /// problem body, while another user goes on unhindered; after `Retry-After` the first user is
  /// served again.
  @Test func theGatewayRateLimitsEachUserOnItsOwn() async throws {
    let system = try await LocalSystem.start(LocalSystem.Options(gatewayRateLimit: (perSecond: 2, burst: 5)))
    try await withCleanup({ await system.stop() }) {
      let run = String(UUID().uuidString.prefix(6)).lowercased()
      let tokens = self.tokens(system, run: run)
      var statuses: [Int] = []
      var limited: (status: Int, headers: [String: String], body: Data)?
      for _ in 0..<20 {
        let reply = try await system.send("GET", "/v1/hubs/\(hub)/cart", token: tokens[.customerA])
        statuses.append(reply.status)
        if reply.status == 429 { limited = reply }
      }
      // At 2 per second over a burst of 5, a quick run of 20 gets at most 5 + a few through.
      #expect(statuses.filter { $0 == 200 }.count >= 5, "\(statuses)")
      #expect(statuses.filter { $0 == 429 }.count >= 10, "\(statuses)")
      #expect(Set(statuses).isSubset(of: [200, 429]), "\(statuses)")
      let reply = try #require(limited)
      #expect(reply.headers["retry-after"] == "1")
      #expect(reply.headers["content-type"]?.contains("application/problem+json") == true)
      let problem = try JSONSerialization.jsonObject(with: reply.body) as? [String: Any]
      #expect(problem?["status"] as? Int == 429)
      #expect(problem?["code"] as? String == "rateLimited")

      // Another user is not limited by the first one's requests.
      let other = try await system.call("GET", "/v1/hubs/\(hub)/cart", token: tokens[.customerB])
      #expect(other.status == 200)
      // And the first is served again once Retry-After has passed.
      let recovered = try await eventually(timeout: .seconds(5)) {
        try await system.call("GET", "/v1/hubs/\(hub)/cart", token: tokens[.customerA]).status == 200
      }
      #expect(recovered)
    }
  }

  /// The rows: every protected endpoint with every invalid token, then the role and ownership
  /// rows, each ownership refusal next to A's own request that succeeds (so a 404 means "not
  /// yours", not "wrong path").
  func rows(_ owned: Owned) -> [Row] {
    let order = "/v1/orders/\(owned.orderId)"
    let otherActivity = String(repeating: "ab", count: 40)
    let placeOrder: [String: any Sendable] = [
      "hub": hub, "cartVersion": 1, "payment": ["method": "applePay", "token": "tok_stranger"],
      "deliverTo": ["lat": 52.5155, "lng": 13.4540],
    ]
    let riderFix: [String: any Sendable] = [
      "lat": 52.51, "lng": 13.45, "recordedAt": Timestamp.string(from: Date()),
    ]
    let stockWrite: [String: any Sendable] = ["available": 1]
    let product: [String: any Sendable] = [
      "name": "Stranger's product", "price": ["minorUnits": 1, "currency": "EUR"] as [String: any Sendable],
    ]
    let adjustment: [String: any Sendable] = ["delta": -1, "reason": "damaged"]
    let promo: [String: any Sendable] = ["kind": "percentOff", "percent": 50]
    let protected: [(String, String, [String: any Sendable]?, [String: String])] = [
      ("GET", "/v1/hubs/\(hub)/cart", nil, [:]),
      ("PUT", "/v1/hubs/\(hub)/cart/items/\(first)", ["quantity": 1], [:]),
      ("PUT", "/v1/hubs/\(hub)/cart/promo", ["code": "SPRING"], [:]),
      ("GET", "/v1/promos/SPRING", nil, [:]),
      ("PUT", "/v1/promos/STRANGER", promo, [:]),
      ("DELETE", "/v1/promos/SPRING", nil, [:]),
      ("PUT", "/v1/hubs/\(hub)/products/\(first)", product, [:]),
      ("PUT", "/v1/hubs/\(hub)/stock/\(first)", stockWrite, [:]),
      ("POST", "/v1/hubs/\(hub)/stock/\(first)/adjustments", adjustment, [:]),
      ("PUT", "/v1/hubs/\(hub)", [:], [:]),
      ("POST", "/v1/orders", placeOrder, ["Idempotency-Key": owned.idempotencyKey]),
      ("GET", "/v1/orders?idempotencyKey=\(owned.idempotencyKey)", nil, [:]),
      ("GET", order, nil, [:]),
      ("GET", "/v1/orders/active", nil, [:]),
      ("GET", "\(order)/tracking", nil, [:]),
      ("PUT", "\(order)/live-activity-token", ["token": otherActivity], [:]),
      ("POST", "\(order)/status", ["status": "arriving"], [:]),
      ("POST", "\(order)/rider", riderFix, [:]),
      ("PUT", "/v1/devices/\(owned.deviceToken)", [:], [:]),
      ("DELETE", "/v1/devices/\(owned.deviceToken)", nil, [:]),
      ("GET", "/v1/sim/devices/\(owned.activityToken)", nil, [:]),
    ]
    var rows: [Row] = []
    for caller in Caller.invalid {
      for (method, path, body, headers) in protected {
        rows.append(
          Row(caller: caller, method: method, path: path, body: body, headers: headers, expected: [401]))
      }
    }
    // Staff endpoints: customers and riders are the wrong role; staff of another hub may not
    // change this hub.
    let staffOnly: [(String, String, [String: any Sendable]?)] = [
      ("PUT", "/v1/hubs/\(hub)/products/\(first)", product),
      ("PUT", "/v1/hubs/\(hub)/stock/\(first)", stockWrite),
      ("POST", "/v1/hubs/\(hub)/stock/\(first)/adjustments", adjustment),
      ("PUT", "/v1/hubs/\(hub)", [:]),
    ]
    for caller in [Caller.customerA, .customerB, .rider, .staffOfAnotherHub] {
      for (method, path, body) in staffOnly {
        rows.append(Row(caller: caller, method: method, path: path, body: body, expected: [403]))
      }
    }
    for caller in [Caller.customerA, .customerB, .rider] {
      rows += [
        Row(caller: caller, method: "GET", path: "/v1/promos/SPRING", expected: [403]),
        Row(caller: caller, method: "PUT", path: "/v1/promos/STRANGER", body: promo, expected: [403]),
        Row(caller: caller, method: "DELETE", path: "/v1/promos/SPRING", expected: [403]),
        Row(caller: caller, method: "GET", path: "/v1/sim/devices/\(owned.activityToken)", expected: [403]),
      ]
    }
    // Customers do not move orders; staff of another hub and riders not assigned to it do not
    // see the order at all.
    rows += [
      Row(
        caller: .customerA, method: "POST", path: "\(order)/status", body: ["status": "arriving"],
        expected: [403]),
      Row(
        caller: .customerB, method: "POST", path: "\(order)/status", body: ["status": "arriving"],
        expected: [403, 404]),
      Row(
        caller: .staffOfAnotherHub, method: "POST", path: "\(order)/status", body: ["status": "arriving"],
        expected: [404]),
      Row(caller: .staffOfAnotherHub, method: "GET", path: "\(order)/tracking", expected: [404]),
      Row(caller: .otherRider, method: "POST", path: "\(order)/rider", body: riderFix, expected: [404]),
      Row(
        caller: .otherRider, method: "POST", path: "\(order)/status", body: ["status": "delivered"],
        expected: [404]),
      Row(caller: .otherRider, method: "GET", path: "\(order)/tracking", expected: [404]),
      Row(caller: .customerA, method: "POST", path: "\(order)/rider", body: riderFix, expected: [403, 404]),
      // The assigned rider may.
      Row(caller: .rider, method: "POST", path: "\(order)/rider", body: riderFix, expected: [200]),
    ]
    // B asks for A's things: 404, while A gets them.
    let owners: [(String, String, [String: any Sendable]?)] = [
      ("GET", order, nil),
      ("GET", "/v1/orders?idempotencyKey=\(owned.idempotencyKey)", nil),
      ("GET", "\(order)/tracking", nil),
    ]
    for (method, path, body) in owners {
      rows.append(Row(caller: .customerA, method: method, path: path, body: body, expected: [200]))
      rows.append(Row(caller: .customerB, method: method, path: path, body: body, expected: [404]))
    }
    rows += [
      Row(
        caller: .customerB, method: "PUT", path: "\(order)/live-activity-token",
        body: ["token": otherActivity],
        expected: [404]),
      Row(caller: .customerB, method: "DELETE", path: "/v1/devices/\(owned.deviceToken)", expected: [404]),
      // B's own views hold nothing of A's (checked by the secrets scan): B's empty cart, B's
      // (no) active orders.
      Row(caller: .customerB, method: "GET", path: "/v1/hubs/\(hub)/cart", expected: [200]),
      Row(caller: .customerB, method: "GET", path: "/v1/orders/active", expected: [200]),
      // B re-using A's idempotency key gets nothing of A's order: keys belong to their user, so
      // this is B's own attempt, refused with B's own (empty) cart.
      Row(
        caller: .customerB, method: "POST", path: "/v1/orders", body: placeOrder,
        headers: ["Idempotency-Key": owned.idempotencyKey], expected: [409], problem: false),
      Row(caller: .staff, method: "GET", path: "/v1/sim/devices/\(owned.activityToken)", expected: [200]),
    ]
    return rows
  }

  /// The tokens of every caller (nothing for `.noToken`).
  func tokens(_ system: LocalSystem, run: String) -> [Caller: String] {
    let now = Date()
    func signed(
      _ subject: String, _ role: Principal.Role = .customer, hubs: [String] = [], secret: String? = nil,
      expiresAt: Date? = nil
    ) -> String {
      HS256Signer(secret: secret ?? system.secret).sign(
        claims: TokenClaims(
          subject: subject, role: role, hubs: hubs, issuedAt: now - 7200, expiresAt: expiresAt ?? now + 3600))
    }
    func base64URL(_ text: String) -> String {
      Data(text.utf8).base64EncodedString().replacingOccurrences(of: "+", with: "-")
        .replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
    }
    let customerA = "stranger-a-\(run)"
    let unsigned =
      base64URL(#"{"alg":"none","typ":"JWT"}"#) + "."
      + base64URL(
        #"{"sub":"\#(customerA)","role":"staff","hubs":["*"],"exp":\#(Int(now.timeIntervalSince1970) + 3600)}"#
      )
      + "."
    return [
      .expired: signed(customerA, expiresAt: now - 3600),
      .foreignKey: signed(customerA, .staff, hubs: ["*"], secret: "not-the-services-secret-at-all"),
      .algNone: unsigned,
      .garbage: "not.a.token",
      .customerA: signed(customerA),
      .customerB: signed("stranger-b-\(run)"),
      .staff: signed("staff-\(run)", .staff, hubs: [hub]),
      .staffOfAnotherHub: signed("staff-elsewhere-\(run)", .staff, hubs: ["h1"]),
      .rider: signed("rider-\(run)", .rider),
      .otherRider: signed("rider-other-\(run)", .rider),
    ]
  }

  /// A fills a cart, places an order that a rider takes on the way, registers a Live Activity
  /// and a device, and starts a new cart.
  func prepare(_ system: LocalSystem, tokens: [Caller: String], run: String) async throws -> Owned {
    let customer = tokens[.customerA]
    for sku in [first, second] {
      let set = try await system.call(
        "PUT", "/v1/hubs/\(hub)/stock/\(sku)", token: tokens[.staff], json: ["available": 100])
      try #require(set.status == 200, "\(String(decoding: set.body, as: UTF8.self))")
    }
    let cart = try await system.fillCart(hub: hub, sku: first, customer: customer)
    let key = "stranger-key-\(run)"
    let orderId = try await system.placeOrder(
      hub: hub, cart: cart, customer: customer, key: key, paymentToken: "tok_a")

    let tracked = try await eventually(timeout: .seconds(15)) {
      try await system.call("GET", "/v1/orders/\(orderId)/tracking", token: customer).status == 200
    }
    try #require(tracked, "no tracking for the order")
    let activityToken = String(repeating: "a1", count: 40)
    let deviceToken = String(repeating: "d2", count: 32)
    let activity = try await system.call(
      "PUT", "/v1/orders/\(orderId)/live-activity-token", token: customer, json: ["token": activityToken])
    try #require(activity.status == 204, "\(String(decoding: activity.body, as: UTF8.self))")
    let device = try await system.call("PUT", "/v1/devices/\(deviceToken)", token: customer, json: [:])
    try #require(device.status == 204, "\(String(decoding: device.body, as: UTF8.self))")
    for body: [String: Any] in [
      ["status": "picking"], ["status": "onTheWay", "rider": ["id": "rider-\(run)", "firstName": "Ana"]],
    ] {
      let moved = try await system.call(
        "POST", "/v1/orders/\(orderId)/status", token: tokens[.staff], json: body)
      try #require(moved.status == 200, "\(String(decoding: moved.body, as: UTF8.self))")
    }
    // The emptied cart gets a line again, so B's empty cart is told apart from A's.
    let emptied = try await eventually(timeout: .seconds(15)) {
      let view = try await system.call("GET", "/v1/hubs/\(hub)/cart", token: customer)
      return (try? JSON.decode(CartView.self, from: view.body))?.lines.isEmpty == true
    }
    try #require(emptied, "the cart was not emptied by the order")
    let again = try await system.call(
      "PUT", "/v1/hubs/\(hub)/cart/items/\(second)", token: customer, json: ["quantity": 1])
    try #require(again.status == 200)
    return Owned(
      customerA: "stranger-a-\(run)", orderId: orderId, idempotencyKey: key, activityToken: activityToken,
      deviceToken: deviceToken)
  }

  /// The hub's count of `sku`.
  func available(_ system: LocalSystem, _ sku: String) async throws -> Int {
    let reply = try await system.call("GET", "/v1/hubs/\(hub)/stock?ids=\(sku)")
    let object = try JSONSerialization.jsonObject(with: reply.body) as? [String: Any]
    return try #require((object?["stock"] as? [String: Int])?[sku])
  }
}
