import Foundation
import GrocerContracts
import GrocerCore
import GrocerStorage

/// OrderService's database: idempotency records and the orders' sagas. Every method is one
/// transaction; the saga's steps are written here before the step after them starts.
///
/// Synchronous and blocking: async callers go through `database.onWriterQueue` (writes) or
/// `runBlocking` (reads).
public final class OrderStore: Sendable {
  public let database: any SQLDatabase
  private let clock: any WallClock
  /// Order and event ids (the saga names its events with them too).
  let ids: any IDGenerator
  /// How long an idempotency key (and its answer) is kept.
  private let keyRetention: TimeInterval
  /// This process's claim on the orders it drives (`claim`).
  public let lease: DriveLease

  public init(
    database: any SQLDatabase, clock: any WallClock, ids: any IDGenerator, keyRetention: TimeInterval,
    lease: DriveLease = DriveLease(driver: "order-service", duration: 15)
  ) {
    self.database = database
    self.clock = clock
    self.ids = ids
    self.keyRetention = keyRetention
    self.lease = lease
  }

  // MARK: - Step 1: the attempt

  public typealias Begin = AttemptStart

  /// Records the attempt under (`user`, `key`) atomically: of two concurrent requests with one
  /// key exactly one starts, the other sees it.
  public func begin(
    user: String, key: String, body: PlaceOrderBody, method: PaymentMethod, correlationID: String?
  ) throws -> Begin {
    let now = clock.now()
    let fingerprint = body.fingerprint
    return try database.write { db in
      if let row = try db.queryOne(
        """
        SELECT fingerprint, order_id, response_status, response_type, response_body
        FROM attempts WHERE user_id = ? AND idempotency_key = ?
        """, user, key)
      {
        let reply = try row.optionalInt(2).map {
          OrderReply(status: $0, contentType: try row.string(3), body: try row.blob(4))
        }
        return .repeated(
          fingerprint: fingerprint, stored: try row.string(0), orderId: try row.string(1), reply: reply)
      }
      let orderId = "ord_" + self.ids.next()
      // A concurrent request with the same key fails the attempt's insert (its primary key), and
      // with it both.
      try db.executeTogether([
        (
          """
          INSERT INTO attempts (user_id, idempotency_key, fingerprint, order_id, created_at, expires_at)
          VALUES (?, ?, ?, ?, ?, ?)
          """,
          [
            user, key, fingerprint, orderId, now.timeIntervalSince1970,
            (now + self.keyRetention).timeIntervalSince1970,
          ]
        ),
        (
          """
          INSERT INTO orders (order_id, user_id, idempotency_key, hub, cart_version, payment_method, payment_token,
            deliver_lat, deliver_lng, correlation_id, step, status, next_attempt_at, created_at, updated_at,
            driver, driven_until)
          VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 'received', 'pending', ?, ?, ?, ?, ?)
          """,
          [
            orderId, user, key, body.hub, body.cartVersion, method.rawValue, body.payment.token,
            body.deliverTo?.lat, body.deliverTo?.lng, correlationID,
            // The request drives its own saga (claimed here); recovery steps in only if it did not finish.
            now.timeIntervalSince1970 + CheckoutPolicy.recoveryGrace, now.timeIntervalSince1970,
            now.timeIntervalSince1970, self.lease.driver, now.timeIntervalSince1970 + self.lease.duration,
          ]
        ),
      ])
      // What `order(_:)` would read back: REAL columns hold seconds since 1970, so the dates are
      // rounded the same way.
      let stored = Date(timeIntervalSince1970: now.timeIntervalSince1970)
      return .started(
        OrderRecord(
          orderId: orderId, userId: user, idempotencyKey: key, hub: body.hub, cartVersion: body.cartVersion,
          method: method, paymentToken: body.payment.token, deliverTo: body.deliverTo,
          correlationID: correlationID, step: .received, status: .pending, cart: nil,
          reservationExpiresAt: nil, paymentId: nil, action: nil, message: nil, chargingSince: nil,
          actionDeadline: nil, retries: 0, createdAt: stored, updatedAt: stored))
    }
  }

  // MARK: - Reading

  public func order(_ orderId: String) throws -> OrderRecord? {
    try database.read { try self.order(orderId, in: $0) }
  }

  /// The order `orderId` if it belongs to `user` and is (or may become) an order: pending from
  /// the moment it is received; an attempt answered without an order (a changed cart) is not.
  public func order(_ orderId: String, user: String) throws -> OrderRecord? {
    guard let order = try order(orderId), order.userId == user, !SagaStep.withoutOrder.contains(order.step)
    else { return nil }
    return order
  }

  /// `(orderId, status)` of `user`'s attempt under `key`, nil if the key was never received (or
  /// was given up before anything happened, so it may be sent again).
  public func lookup(user: String, key: String) throws -> (orderId: String, status: OrderStatus)? {
    try database.read { db in
      guard
        let row = try db.queryOne(
          """
          SELECT o.order_id, o.status FROM attempts a JOIN orders o ON o.order_id = a.order_id
          WHERE a.user_id = ? AND a.idempotency_key = ?
          """, user, key)
      else { return nil }
      return (try row.string(0), OrderStatus(rawValue: try row.string(1)) ?? .pending)
    }
  }

  /// The answer stored for the attempt that created `orderId`.
  public func reply(for orderId: String) throws -> OrderReply? {
    try database.read { try self.storedReply(orderId, in: $0) }
  }

  /// The order a payment belongs to.
  public func orderId(paymentId: String) throws -> String? {
    try database.read { db in
      try db.queryOne("SELECT order_id FROM orders WHERE payment_id = ?", paymentId).map { try $0.string(0) }
    }
  }

  /// Unfinished orders due for the recovery loop that no other driver holds, oldest due first.
  public func due(limit: Int) throws -> [String] {
    let now = clock.now().timeIntervalSince1970
    return try database.read { db in
      try db.query(
        """
        SELECT order_id FROM orders
        WHERE step IN \(Self.placeholders(SagaStep.unfinished)) AND next_attempt_at <= ?
          AND \(Self.claimable)
        ORDER BY next_attempt_at LIMIT ?
        """, bindings: SagaStep.unfinished.map(\.rawValue) + [now, now, lease.driver, limit]
      ).map { try $0.string(0) }
    }
  }

  // MARK: - Drive claims

  /// Claims `orderId` for this process's drive, for `lease.duration`: true when it is ours now
  /// (no one held it, their claim ran out, or it was ours already), false while another driver
  /// holds it, nil when there is no such order. Every step the drive records renews the claim,
  /// and a step whose claim passed to another driver is not written.
  public func claim(_ orderId: String) throws -> Bool? {
    let now = clock.now().timeIntervalSince1970
    return try database.write { db in
      try db.execute(
        "UPDATE orders SET driver = ?, driven_until = ? WHERE order_id = ? AND \(Self.claimable)",
        self.lease.driver, now + self.lease.duration, orderId, now, self.lease.driver)
      if db.changes == 1 { return true }
      return try db.queryOne("SELECT 1 FROM orders WHERE order_id = ?", orderId) == nil ? nil : false
    }
  }

  /// The condition under which this process may drive an order (two bindings: now, the driver).
  private static let claimable = "(driven_until IS NULL OR driven_until < ? OR driver = ?)"

  /// How many orders are in each step (metrics, tests).
  public func countsBySteps() throws -> [SagaStep: Int] {
    try database.read { db in
      var counts: [SagaStep: Int] = [:]
      for row in try db.query("SELECT step, count(*) FROM orders GROUP BY step") {
        if let step = SagaStep(rawValue: try row.string(0)) { counts[step] = try row.int(1) }
      }
      return counts
    }
  }

  // MARK: - Saga steps

  /// Writes one recovery point of the checkout, as `CheckoutMachine` decided it, in one
  /// transaction: the order's move, the key's answer (`reply`) and the step's event. Returns the
  /// key's answer: `reply`, or the one stored already when the order reached that end before
  /// (a second drive, a callback racing recovery).
  @discardableResult
  public func record(
    _ change: CheckoutRecord, of orderId: String, reply: OrderReply?, event: OutgoingMessage?
  )
    throws -> OrderReply?
  {
    try database.write { db in
      let now = self.clock.now().timeIntervalSince1970
      // Read only where the step decides what to write; elsewhere the move's guard checks it.
      func step() throws -> SagaStep {
        let name = try db.queryOne("SELECT step FROM orders WHERE order_id = ?", orderId)?.string(0)
        guard let step = name.flatMap(SagaStep.init(rawValue:)) else {
          throw OrderStoreError("no order \(orderId)")
        }
        return step
      }
      var set: [String: SQLValue] = [:]
      switch change {
      case .priced(let cart):
        set["cart"] = .blob(cart.jsonBytes())
      case .reserved(let expiresAt, let since):
        set["reservation_expires_at"] = expiresAt.map { .real($0.timeIntervalSince1970) } ?? .null
        set["charging_since"] = .real(since.timeIntervalSince1970)
      case .charging(let since):
        set["charging_since"] = .real(since.timeIntervalSince1970)
      case .needsAction(let paymentId, let action, let deadline, let nextLookAt):
        set = [
          "payment_id": .text(paymentId), "action_type": .text(action.type), "action_url": .text(action.url),
          "action_deadline": .real(deadline.timeIntervalSince1970),
          "next_attempt_at": .real(nextLookAt.timeIntervalSince1970),
        ]
      case .confirmed(let paymentId):
        set = ["payment_id": .text(paymentId), "payment_token": .null, "message": .null]
      case .declined(let paymentId, _, let message):
        set = ["payment_id": .text(paymentId), "payment_token": .null, "message": .text(message)]
      case .rejected:
        set["payment_token"] = .null
      case .abandoned(let compensate, let reason, _):
        guard SagaStep.abandonable.contains(try step()) else { return nil }
        guard compensate else {
          // Forgotten only by the drive that holds it (as a move would be refused otherwise).
          try db.execute("DELETE FROM orders WHERE order_id = ? AND driver = ?", orderId, self.lease.driver)
          guard db.changes == 1 else {
            throw OrderStoreError("order \(orderId) is driven by another replica")
          }
          try db.execute("DELETE FROM attempts WHERE order_id = ?", orderId)
          return nil
        }
        try db.execute("DELETE FROM attempts WHERE order_id = ?", orderId)
        set = ["payment_token": .null, "message": .text(reason)]
      case .postponed:
        guard let row = try db.queryOne("SELECT retries FROM orders WHERE order_id = ?", orderId) else {
          return nil
        }
        let retries = try row.int(0) + 1
        // The drive ends here: its claim goes (only if it still holds it).
        try db.execute(
          """
          UPDATE orders SET retries = ?, next_attempt_at = ?, updated_at = ?, driven_until = NULL
          WHERE order_id = ? AND driver = ?
          """, retries, now + CheckoutPolicy.retryDelay(afterTries: retries), now, orderId, self.lease.driver)
        return nil
      }
      if let move = change.move, try !self.move(orderId, move, set: set, now: now, in: db) {
        // An order already at the end this records answers what it answered then (a second
        // drive, a callback racing recovery): read only when the move found it elsewhere.
        if move.to == .confirmed || move.to == .declined, try step() == move.to,
          let stored = try self.storedReply(orderId, in: db)
        {
          return stored
        }
        throw try self.refusedMove(orderId, move, in: db)
      }
      if let event { try Outbox.append(event, in: db) }
      if let reply { try self.answer(orderId, reply, in: db) }
      return reply
    }
  }

  /// Forgets idempotency keys older than their retention (the orders stay), and attempts that
  /// never became orders with them. Returns how many keys went.
  @discardableResult
  public func purgeExpiredKeys() throws -> Int {
    let now = clock.now().timeIntervalSince1970
    return try database.write { db in
      let finished = SagaStep.finished.map(\.rawValue)
      let withoutOrder = SagaStep.withoutOrder.map(\.rawValue)
      let unfinished = SagaStep.unfinished.map(\.rawValue)
      let expired = """
        SELECT a.order_id FROM attempts a JOIN orders o ON o.order_id = a.order_id
        WHERE a.expires_at < ? AND o.step IN \(Self.placeholders(SagaStep.finished))
        """
      try db.execute(
        "DELETE FROM orders WHERE step IN \(Self.placeholders(SagaStep.withoutOrder)) AND order_id IN (\(expired))",
        bindings: withoutOrder + [now] + finished)
      // An abandoned attempt lost its key when it was given up; it goes after the retention too.
      try db.execute(
        "DELETE FROM orders WHERE step = ? AND updated_at < ?", SagaStep.abandoned.rawValue,
        now - self.keyRetention)
      try db.execute(
        """
        DELETE FROM attempts WHERE expires_at < ? AND order_id NOT IN (
          SELECT order_id FROM orders WHERE step IN \(Self.placeholders(SagaStep.unfinished)))
        """, bindings: [now] + unfinished)
      return db.changes
    }
  }

  // MARK: - Helpers

  private func storedReply(_ orderId: String, in db: any SQLConnection) throws -> OrderReply? {
    guard
      let row = try db.queryOne(
        "SELECT response_status, response_type, response_body FROM attempts WHERE order_id = ?", orderId),
      let status = try row.optionalInt(0)
    else { return nil }
    return OrderReply(status: status, contentType: try row.string(1), body: try row.blob(2))
  }

  private func answer(_ orderId: String, _ reply: OrderReply, in db: any SQLConnection) throws {
    try db.execute(
      "UPDATE attempts SET response_status = ?, response_type = ?, response_body = ? WHERE order_id = ?",
      reply.status, reply.contentType, reply.body, orderId)
  }

  /// Moves `orderId` as `move` says if it is at one of `move.from` and this process still holds
  /// its claim (else returns false: two drivers raced, or a step was skipped), setting `set` too.
  /// A move resets the retry backoff and renews the claim, or lets it go where the drive comes to
  /// rest.
  private func move(
    _ orderId: String, _ move: SagaMove, set: [String: SQLValue], now: TimeInterval, in db: any SQLConnection
  ) throws -> Bool {
    var assignments = ["step = ?", "updated_at = ?", "retries = 0", "driven_until = ?"]
    let drives = SagaStep.driven.contains(move.to)
    var bindings: [any SQLBindable] = [
      move.to.rawValue, now, drives ? SQLValue.real(now + lease.duration) : .null,
    ]
    if let status = move.status {
      assignments.append("status = ?")
      bindings.append(status.rawValue)
    }
    if set["next_attempt_at"] == nil {
      assignments.append("next_attempt_at = ?")
      bindings.append(now + CheckoutPolicy.recoveryGrace)
    }
    for (column, value) in set.sorted(by: { $0.key < $1.key }) {
      assignments.append("\(column) = ?")
      bindings.append(value)
    }
    try db.execute(
      """
      UPDATE orders SET \(assignments.joined(separator: ", "))
      WHERE order_id = ? AND step IN \(Self.placeholders(move.from)) AND driver = ?
      """,
      bindings: bindings + [orderId] + move.from.map(\.rawValue) + [lease.driver])
    return db.changes == 1
  }

  /// Why `move` of `orderId` was refused: where the order is and who drives it.
  private func refusedMove(_ orderId: String, _ move: SagaMove, in db: any SQLConnection) throws
    -> OrderStoreError
  {
    let current = try db.queryOne("SELECT step, driver FROM orders WHERE order_id = ?", orderId)
    return OrderStoreError(
      "order \(orderId) is at \(try current?.string(0) ?? "nowhere") driven by \(try current?.optionalString(1) ?? "no one"), not at \(move.from.map(\.rawValue)) by \(lease.driver); cannot move to \(move.to)"
    )
  }

  /// `(?, ?, …)` for `steps`, bound in order.
  private static func placeholders(_ steps: [SagaStep]) -> String {
    "(" + steps.map { _ in "?" }.joined(separator: ", ") + ")"
  }

  private func order(_ orderId: String, in db: any SQLConnection) throws -> OrderRecord? {
    guard
      let row = try db.queryOne(
        """
        SELECT order_id, user_id, idempotency_key, hub, cart_version, payment_method, payment_token, deliver_lat,
          deliver_lng, correlation_id, step, status, cart, payment_id, action_type, action_url, message,
          charging_since, action_deadline, retries, created_at, updated_at, reservation_expires_at
        FROM orders WHERE order_id = ?
        """, orderId)
    else { return nil }
    let lat = try row.optionalDouble(7)
    let lng = try row.optionalDouble(8)
    let cart = try row.optionalBlob(12).map { try JSON.decode(CartView.self, from: Data($0)) }
    let actionURL = try row.optionalString(15)
    return OrderRecord(
      orderId: try row.string(0), userId: try row.string(1), idempotencyKey: try row.string(2),
      hub: try row.string(3), cartVersion: try row.int64(4),
      method: PaymentMethod(rawValue: try row.string(5)) ?? .card, paymentToken: try row.optionalString(6),
      deliverTo: lat.flatMap { lat in lng.map { GeoPoint(lat: lat, lng: $0) } },
      correlationID: try row.optionalString(9), step: SagaStep(rawValue: try row.string(10)) ?? .received,
      status: OrderStatus(rawValue: try row.string(11)) ?? .pending, cart: cart,
      reservationExpiresAt: try row.optionalDouble(22).map(Date.init(timeIntervalSince1970:)),
      paymentId: try row.optionalString(13),
      action: try actionURL.map {
        PaymentAction(type: try row.optionalString(14) ?? "threeDSecure", url: $0)
      },
      message: try row.optionalString(16),
      chargingSince: try row.optionalDouble(17).map(Date.init(timeIntervalSince1970:)),
      actionDeadline: try row.optionalDouble(18).map(Date.init(timeIntervalSince1970:)),
      retries: try row.int(19),
      createdAt: Date(timeIntervalSince1970: try row.double(20)),
      updatedAt: Date(timeIntervalSince1970: try row.double(21)))
  }
}

/// Who drives the sagas of this process, and how long a claim on an order holds unrenewed:
/// longer than any one step's call (a drive renews it at every step it records), so a claim
/// runs out only when its driver stopped. A restarted process with the same `driver` takes its
/// orders back at once; give every replica its own.
public struct DriveLease: Sendable, Hashable {
  public var driver: String
  public var duration: TimeInterval

  public init(driver: String, duration: TimeInterval) {
    self.driver = driver
    self.duration = duration
  }
}

/// A saga step that found its order somewhere it did not expect (a second driver raced it, or
/// the order is gone): the step is not taken, and the saga re-reads the order.
public struct OrderStoreError: Error, Sendable, CustomStringConvertible {
  public var description: String
  init(_ description: String) { self.description = description }
}
