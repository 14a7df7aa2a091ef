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
  public let database: SQLiteDatabase
  private let clock: any WallClock
  private let ids: any IDGenerator
  /// How long an idempotency key (and its answer) is kept.
  private let keyRetention: TimeInterval

  public init(
    database: SQLiteDatabase, clock: any WallClock, ids: any IDGenerator, keyRetention: TimeInterval
  ) {
    self.database = database
    self.clock = clock
    self.ids = ids
    self.keyRetention = keyRetention
  }

  // MARK: - Step 1: the attempt

  /// What became of a `POST /v1/orders` when its attempt was recorded.
  public enum Begin: Sendable, Hashable {
    /// New: the saga may start; the order as just recorded (the saga's first step takes it in
    /// hand instead of reading it back).
    case started(OrderRecord)
    /// The key's answer, to replay.
    case replay(OrderReply)
    /// The key's first request is still running.
    case inProgress(orderId: String)
    /// The key was used with another body.
    case keyReused
  }

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
        guard try row.string(0) == fingerprint else { return .keyReused }
        guard let status = try row.optionalInt(2) else { return .inProgress(orderId: try row.string(1)) }
        return .replay(
          OrderReply(status: status, contentType: try row.string(3), body: try row.blob(4)))
      }
      let orderId = "ord_" + self.ids.next()
      try db.execute(
        """
        INSERT INTO attempts (user_id, idempotency_key, fingerprint, order_id, created_at, expires_at)
        VALUES (?, ?, ?, ?, ?, ?)
        """, user, key, fingerprint, orderId, now.timeIntervalSince1970,
        (now + self.keyRetention).timeIntervalSince1970)
      try db.execute(
        """
        INSERT INTO orders (order_id, user_id, idempotency_key, hub, cart_version, payment_method, payment_token,
          deliver_lat, deliver_lng, correlation_id, step, status, next_attempt_at, created_at, updated_at)
        VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 'received', 'pending', ?, ?, ?)
        """, orderId, user, key, body.hub, body.cartVersion, method.rawValue, body.payment.token,
        body.deliverTo?.lat, body.deliverTo?.lng, correlationID,
        // The request drives its own saga; recovery steps in only if it did not finish.
        now.timeIntervalSince1970 + Self.recoveryGrace, now.timeIntervalSince1970, now.timeIntervalSince1970)
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

  /// How long a new order is left to the request that started it before recovery looks at it.
  static let recoveryGrace: TimeInterval = 5

  // MARK: - Reading

  public func order(_ orderId: String) throws -> OrderRecord? {
    try database.read { try self.order(orderId, in: $0) }
  }

  /// The order `orderId` if it belongs to `user` and is (or may become) an order: pending from
  /// the moment it is received; an attempt answered without an order (a changed cart) is not.
  public func order(_ orderId: String, user: String) throws -> OrderRecord? {
    guard let order = try order(orderId), order.userId == user, order.step != .rejected,
      order.step != .abandoned
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
    try database.read { db in
      guard
        let row = try db.queryOne(
          "SELECT response_status, response_type, response_body FROM attempts WHERE order_id = ?", orderId),
        let status = try row.optionalInt(0)
      else { return nil }
      return OrderReply(status: status, contentType: try row.string(1), body: try row.blob(2))
    }
  }

  /// The order a payment belongs to.
  public func orderId(paymentId: String) throws -> String? {
    try database.read { db in
      try db.queryOne("SELECT order_id FROM orders WHERE payment_id = ?", paymentId).map { try $0.string(0) }
    }
  }

  /// Unfinished orders due for the recovery loop, oldest due first.
  public func due(limit: Int) throws -> [String] {
    let now = clock.now().timeIntervalSince1970
    return try database.read { db in
      try db.query(
        """
        SELECT order_id FROM orders
        WHERE step IN ('received', 'priced', 'reserved', 'charging', 'needsAction') AND next_attempt_at <= ?
        ORDER BY next_attempt_at LIMIT ?
        """, now, limit
      ).map { try $0.string(0) }
    }
  }

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

  /// Step 2 done: the cart as priced at the customer's version.
  public func recordPriced(_ orderId: String, cart: CartView) throws {
    try update(orderId, from: [.received], to: .priced, set: ["cart": .blob(cart.jsonBytes())])
  }

  /// Step 3 done: StockService holds the lines. With `chargingSince`, step 4 starts in the same
  /// write (the order goes straight to `charging`).
  public func recordReserved(_ orderId: String, expiresAt: Date?, chargingSince: Date? = nil) throws {
    var set: [String: SQLValue] = [
      "reservation_expires_at": expiresAt.map { .real($0.timeIntervalSince1970) } ?? .null
    ]
    if let chargingSince { set["charging_since"] = .real(chargingSince.timeIntervalSince1970) }
    try update(orderId, from: [.priced], to: chargingSince == nil ? .reserved : .charging, set: set)
  }

  /// Step 4 starts: from here on, the provider may hold a charge under the order's payment key.
  public func recordCharging(_ orderId: String) throws {
    try update(
      orderId, from: [.reserved], to: .charging,
      set: ["charging_since": .real(clock.now().timeIntervalSince1970)])
  }

  /// The bank wants 3-D Secure: 202 with the action is the key's answer until the verdict.
  public func recordNeedsAction(
    _ orderId: String, paymentId: String, action: PaymentAction, deadline: Date
  ) throws -> OrderReply {
    let reply = OrderReply.needsAction(orderId: orderId, paymentId: paymentId, action: action)
    try database.write { db in
      try self.update(
        orderId, from: [.charging, .needsAction], to: .needsAction, status: .needsAction,
        set: [
          "payment_id": .text(paymentId), "action_type": .text(action.type), "action_url": .text(action.url),
          "action_deadline": .real(deadline.timeIntervalSince1970),
          "next_attempt_at": .real(min(deadline, clock.now() + Self.actionPoll).timeIntervalSince1970),
        ], in: db)
      try self.answer(orderId, reply, in: db)
    }
    return reply
  }

  /// How often an order waiting for 3-D Secure is looked up at the provider, in case its
  /// callback never comes.
  static let actionPoll: TimeInterval = 30

  /// Paid: the order is confirmed, `order.confirmed` goes to the outbox, 201 is the key's answer,
  /// and the payment token is forgotten — all in one transaction.
  ///
  /// `known` is the order as the caller read it, if it has it: what the event needs (user, hub,
  /// cart, address) does not change once the order is priced, so only its step is read again
  /// instead of decoding the stored cart once more.
  public func confirm(_ orderId: String, paymentId: String, known: OrderRecord? = nil) throws -> OrderReply {
    let now = clock.now()
    return try database.write { db in
      var order: OrderRecord
      if let known, known.orderId == orderId, known.cart != nil {
        let step = try db.queryOne("SELECT step FROM orders WHERE order_id = ?", orderId)?.string(0)
        guard step != nil else { throw OrderStoreError("order \(orderId) does not exist") }
        order = known
        order.step = step.flatMap(SagaStep.init(rawValue:)) ?? known.step
      } else {
        order = try self.require(orderId, in: db)
      }
      if order.step == .confirmed, let reply = try self.storedReply(orderId, in: db) { return reply }
      guard let cart = order.cart else { throw OrderStoreError("order \(orderId) has no priced cart") }
      try self.update(
        orderId, from: [.charging, .needsAction], to: .confirmed, status: .confirmed,
        set: ["payment_id": .text(paymentId), "payment_token": .null, "message": .null], in: db)
      let payload = OrderConfirmed(
        orderId: orderId, userId: order.userId, hub: order.hub, cartVersion: cart.version,
        lines: cart.lines.map(OrderLine.init), totals: cart.totals, deliverTo: order.deliverTo,
        paymentId: paymentId, placedAt: now)
      // Written in one pass by hand (no JSONValue round trip, no JSONEncoder).
      try Outbox.append(
        EventEnvelope.message(
          id: self.ids.next(), type: OrderEventType.confirmed, occurredAt: now, source: OrderEventType.source,
          correlationId: order.correlationID, subject: orderId, sequence: 1, payloadJSON: payload.jsonBytes),
        in: db)
      let reply = OrderReply.confirmed(orderId: orderId, total: cart.totals.total)
      try self.answer(orderId, reply, in: db)
      return reply
    }
  }

  /// Not paid: declined, `order.declined` (StockService releases the reservation), 402 is the
  /// key's answer.
  public func decline(_ orderId: String, paymentId: String?, reason: String, message: String) throws
    -> OrderReply
  {
    let now = clock.now()
    return try database.write { db in
      let order = try self.require(orderId, in: db)
      if order.step == .declined, let reply = try self.storedReply(orderId, in: db) { return reply }
      try self.update(
        orderId, from: [.priced, .reserved, .charging, .needsAction], to: .declined, status: .declined,
        set: [
          "payment_id": paymentId.map { .text($0) } ?? .null, "payment_token": .null,
          "message": .text(message),
        ], in: db)
      try self.appendEnded(
        OrderEventType.declined, order: order, reason: reason, message: message, now: now, in: db)
      let reply = OrderReply.declined(orderId: orderId, message: message)
      try self.answer(orderId, reply, in: db)
      return reply
    }
  }

  /// Answered without becoming an order (the cart changed, was empty or blocked): nothing is
  /// reserved or charged, and `reply` is the key's answer.
  public func reject(_ orderId: String, status: OrderStatus, reply: OrderReply) throws {
    try database.write { db in
      try self.update(
        orderId, from: [.received, .priced], to: .rejected, status: status, set: ["payment_token": .null],
        in: db)
      try self.answer(orderId, reply, in: db)
    }
  }

  /// Gives up before any charge because a dependency did not answer: the key is freed (a retry
  /// with it starts again, and the lookup by key says "never received"). With `compensate`, a
  /// reservation may exist, so `order.cancelled` asks StockService to release it.
  public func abandon(_ orderId: String, compensate: Bool, reason: String) throws {
    let now = clock.now()
    try database.write { db in
      let order = try self.require(orderId, in: db)
      guard order.step == .received || order.step == .priced || order.step == .reserved else { return }
      try db.execute("DELETE FROM attempts WHERE order_id = ?", orderId)
      if compensate {
        try self.update(
          orderId, from: [order.step], to: .abandoned, status: .rejected,
          set: ["payment_token": .null, "message": .text(reason)], in: db)
        try self.appendEnded(
          OrderEventType.cancelled, order: order, reason: reason, message: nil, now: now, in: db)
      } else {
        try db.execute("DELETE FROM orders WHERE order_id = ?", orderId)
      }
    }
  }

  /// The saga could not finish this round (a payment without verdict, storage trouble): it is
  /// tried again after a backoff that grows with each try (capped at a minute).
  public func postpone(_ orderId: String) throws {
    let now = clock.now().timeIntervalSince1970
    try database.write { db in
      guard let row = try db.queryOne("SELECT retries FROM orders WHERE order_id = ?", orderId) else {
        return
      }
      let retries = try row.int(0) + 1
      let delay = min(60, 0.5 * pow(2, Double(min(retries, 10))))
      try db.execute(
        "UPDATE orders SET retries = ?, next_attempt_at = ?, updated_at = ? WHERE order_id = ?", retries,
        now + delay, now, orderId)
    }
  }

  /// Forgets idempotency keys older than their retention (the orders stay), and attempts that
  /// never became orders with them. Returns how many keys went.
  @discardableResult
  public func purgeExpiredKeys() throws -> Int {
    let now = clock.now().timeIntervalSince1970
    return try database.write { db in
      let expired =
        "SELECT a.order_id FROM attempts a JOIN orders o ON o.order_id = a.order_id WHERE a.expires_at < ? AND o.step IN ('confirmed', 'declined', 'rejected', 'abandoned')"
      try db.execute(
        "DELETE FROM orders WHERE step IN ('rejected', 'abandoned') AND order_id IN (\(expired))", now)
      // An abandoned attempt lost its key when it was given up; it goes after the retention too.
      try db.execute(
        "DELETE FROM orders WHERE step = 'abandoned' AND updated_at < ?", now - self.keyRetention)
      try db.execute(
        """
        DELETE FROM attempts WHERE expires_at < ? AND order_id NOT IN (
          SELECT order_id FROM orders WHERE step IN ('received', 'priced', 'reserved', 'charging', 'needsAction'))
        """, now)
      return db.changes
    }
  }

  // MARK: - Helpers

  private func require(_ orderId: String, in db: SQLiteConnection) throws -> OrderRecord {
    guard let order = try order(orderId, in: db) else {
      throw OrderStoreError("no order \(orderId)")
    }
    return order
  }

  private func storedReply(_ orderId: String, in db: SQLiteConnection) throws -> OrderReply? {
    guard
      let row = try db.queryOne(
        "SELECT response_status, response_type, response_body FROM attempts WHERE order_id = ?", orderId),
      let status = try row.optionalInt(0)
    else { return nil }
    return OrderReply(status: status, contentType: try row.string(1), body: try row.blob(2))
  }

  private func answer(_ orderId: String, _ reply: OrderReply, in db: SQLiteConnection) throws {
    try db.execute(
      "UPDATE attempts SET response_status = ?, response_type = ?, response_body = ? WHERE order_id = ?",
      reply.status, reply.contentType, reply.body, orderId)
  }

  private func appendEnded(
    _ type: String, order: OrderRecord, reason: String, message: String?, now: Date, in db: SQLiteConnection
  ) throws {
    let payload = OrderEnded(
      orderId: order.orderId, userId: order.userId, hub: order.hub, reason: reason, message: message)
    try Outbox.append(
      try EventEnvelope.message(
        id: ids.next(), type: type, occurredAt: now, source: OrderEventType.source,
        correlationId: order.correlationID, subject: order.orderId, sequence: 1, payload: payload), in: db)
  }

  private func update(
    _ orderId: String, from: [SagaStep], to step: SagaStep, status: OrderStatus? = nil,
    set: [String: SQLValue]
  ) throws {
    try database.write { try self.update(orderId, from: from, to: step, status: status, set: set, in: $0) }
  }

  /// Moves `orderId` to `step` if it is in one of `from` (else throws: two drivers raced, or
  /// a step was skipped), setting `set` too. A move resets the retry backoff.
  private func update(
    _ orderId: String, from: [SagaStep], to step: SagaStep, status: OrderStatus?, set: [String: SQLValue],
    in db: SQLiteConnection
  ) throws {
    let now = clock.now().timeIntervalSince1970
    var assignments = ["step = ?", "updated_at = ?", "retries = 0"]
    var bindings: [any SQLBindable] = [step.rawValue, now]
    if let status {
      assignments.append("status = ?")
      bindings.append(status.rawValue)
    }
    if set["next_attempt_at"] == nil {
      assignments.append("next_attempt_at = ?")
      bindings.append(now + Self.recoveryGrace)
    }
    for (column, value) in set.sorted(by: { $0.key < $1.key }) {
      assignments.append("\(column) = ?")
      bindings.append(value)
    }
    let placeholders = from.map { _ in "?" }.joined(separator: ", ")
    try db.execute(
      "UPDATE orders SET \(assignments.joined(separator: ", ")) WHERE order_id = ? AND step IN (\(placeholders))",
      bindings: bindings + [orderId] + from.map(\.rawValue))
    guard db.changes == 1 else {
      let current = try db.queryOne("SELECT step FROM orders WHERE order_id = ?", orderId)?.string(0)
      throw OrderStoreError(
        "order \(orderId) is at \(current ?? "nowhere"), not \(from.map(\.rawValue)); cannot move to \(step)")
    }
  }

  private func order(_ orderId: String, in db: SQLiteConnection) throws -> OrderRecord? {
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

/// A saga step that found its order somewhere it did not expect (a second driver raced it, or
/// the order is gone): the step is not taken, and the saga re-reads the order.
public struct OrderStoreError: Error, Sendable, CustomStringConvertible {
  public var description: String
  init(_ description: String) { self.description = description }
}
