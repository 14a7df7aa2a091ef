import Foundation
import GrocerCore
import GrocerDatabase
import GrocerRuntime
import GrocerStorage

/// The built-in payment provider: a stand-in for a real one that behaves like one, with its own
/// ledger (a database of its own, apart from OrderService's, as a provider's books are), so a
/// charge survives a crash of OrderService and can be looked up afterwards. Replicas share one
/// ledger on PostgreSQL (`GROCER_PAYMENT_SIM_DATABASE_URL`), as they would share a provider.
///
/// It decides by token: `sim-decline` declines, `sim-3ds` requires 3-D Secure (the verdict comes
/// by callback), `sim-timeout` takes `hang` to answer (and approves then), anything else approves.
/// Every call is idempotent on the charge's key: asking again answers the same payment.
public final class SimulatedPaymentProvider: PaymentProvider {
  public static let declineToken = "sim-decline"
  public static let threeDSToken = "sim-3ds"
  public static let timeoutToken = "sim-timeout"

  public let database: any SQLDatabase
  private let clock: any WallClock
  private let ids: any IDGenerator
  /// How long a `sim-timeout` charge takes to answer.
  public let hang: TimeInterval

  public init(
    location: DatabaseLocation, clock: any WallClock, ids: any IDGenerator, hang: TimeInterval, logger: Logger
  ) throws {
    database = try location.open(migrations: Self.migrations, durability: .full, readers: 1, logger: logger)
    self.clock = clock
    self.ids = ids
    self.hang = hang
  }

  /// A ledger in the SQLite file at `path`.
  public convenience init(
    path: String, clock: any WallClock, ids: any IDGenerator, hang: TimeInterval, logger: Logger
  ) throws {
    try self.init(location: .sqlite(path: path), clock: clock, ids: ids, hang: hang, logger: logger)
  }

  static let migrations: [Migration] = [
    Migration(
      version: 1, name: "simulated provider ledger",
      sql: """
        CREATE TABLE charges (
          idempotency_key TEXT PRIMARY KEY,
          payment_id TEXT NOT NULL UNIQUE,
          reference TEXT NOT NULL,
          amount INTEGER NOT NULL,
          currency TEXT NOT NULL,
          method TEXT NOT NULL,
          state TEXT NOT NULL,
          message TEXT,
          action_url TEXT,
          settle_at REAL,
          created_at REAL NOT NULL
        );
        """,
      postgres: """
        CREATE TABLE charges (
          idempotency_key TEXT PRIMARY KEY,
          payment_id TEXT NOT NULL UNIQUE,
          reference TEXT NOT NULL,
          amount BIGINT NOT NULL,
          currency TEXT NOT NULL,
          method TEXT NOT NULL,
          state TEXT NOT NULL,
          message TEXT,
          action_url TEXT,
          settle_at DOUBLE PRECISION,
          created_at DOUBLE PRECISION NOT NULL
        );
        """)
  ]

  /// One row of the ledger, for tests and operators.
  public struct Entry: Hashable, Sendable {
    public var idempotencyKey: String
    public var paymentId: String
    public var reference: String
    public var amount: Money
    public var state: String
  }

  public func charge(_ request: ChargeRequest) async throws -> PaymentState {
    let (state, settleAt) = try await database.writeAsync { db -> (PaymentState, Double?) in
      if let row = try self.row(key: request.idempotencyKey, in: db) { return try self.resolve(row, in: db) }
      let paymentId = "pay_" + self.ids.next()
      let now = self.clock.now().timeIntervalSince1970
      var state = "approved"
      var message: String?
      var url: String?
      var settleAt: Double?
      switch request.token {
      case Self.declineToken:
        state = "declined"
        message = "The card was declined."
      case Self.threeDSToken:
        state = "requiresAction"
        url = "https://3ds.simulator.grocer.invalid/challenge/\(paymentId)"
      case Self.timeoutToken:
        state = "processing"
        settleAt = now + self.hang
      default:
        break
      }
      try db.execute(
        """
        INSERT INTO charges (idempotency_key, payment_id, reference, amount, currency, method, state, message,
          action_url, settle_at, created_at)
        VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
        """, request.idempotencyKey, paymentId, request.reference, request.amount.minorUnits,
        request.amount.currency, request.method.rawValue, state, message, url, settleAt, now)
      // The row as just written, without reading it back.
      let row = Row(
        key: request.idempotencyKey, paymentId: paymentId, state: state, message: message, actionURL: url,
        settleAt: settleAt)
      return try self.resolve(row, in: db)
    }
    // A slow charge keeps its caller waiting until it settles (or the caller gives up).
    if case .processing = state, let settleAt {
      let wait = max(0, settleAt - clock.now().timeIntervalSince1970)
      try await Task.sleep(for: .milliseconds(Int(wait * 1000)))
      return try await lookup(idempotencyKey: request.idempotencyKey) ?? state
    }
    return state
  }

  public func lookup(idempotencyKey: String) async throws -> PaymentState? {
    try await database.writeAsync { db in
      guard let row = try self.row(key: idempotencyKey, in: db) else { return nil }
      return try self.resolve(row, in: db).0
    }
  }

  public func cancel(idempotencyKey: String) async throws -> PaymentState? {
    try await database.writeAsync { db in
      guard let row = try self.row(key: idempotencyKey, in: db) else { return nil }
      let (state, _) = try self.resolve(row, in: db)
      switch state {
      case .processing(let id), .requiresAction(let id, _):
        try db.execute(
          "UPDATE charges SET state = 'declined', message = 'cancelled' WHERE idempotency_key = ?",
          idempotencyKey)
        return .declined(paymentId: id, message: "cancelled")
      case .approved, .declined:
        return state
      }
    }
  }

  public func settle(_ event: PaymentEvent) async throws -> PaymentState? {
    try await database.writeAsync { db in
      guard
        let row = try db.queryOne(
          "SELECT idempotency_key FROM charges WHERE payment_id = ?", event.paymentId),
        let current = try self.row(key: try row.string(0), in: db)
      else { return nil }
      let (state, _) = try self.resolve(current, in: db)
      // The first verdict wins; a repeated or late callback changes nothing.
      guard case .requiresAction = state else { return state }
      let approved = event.kind == .succeeded
      let message = approved ? nil : (event.message ?? "3-D Secure failed")
      try db.execute(
        "UPDATE charges SET state = ?, message = ? WHERE payment_id = ?", approved ? "approved" : "declined",
        message, event.paymentId)
      return approved
        ? .approved(paymentId: event.paymentId) : .declined(paymentId: event.paymentId, message: message!)
    }
  }

  /// Every charge, oldest first.
  public func ledger() throws -> [Entry] {
    try database.read { db in
      try db.query(
        "SELECT idempotency_key, payment_id, reference, amount, currency, state FROM charges ORDER BY created_at, payment_id"
      ).map {
        Entry(
          idempotencyKey: try $0.string(0), paymentId: try $0.string(1), reference: try $0.string(2),
          amount: Money(minorUnits: try $0.int(3), currency: try $0.string(4)), state: try $0.string(5))
      }
    }
  }

  private struct Row {
    var key: String
    var paymentId: String
    var state: String
    var message: String?
    var actionURL: String?
    var settleAt: Double?
  }

  private func row(key: String, in db: any SQLConnection) throws -> Row? {
    try db.queryOne(
      "SELECT payment_id, state, message, action_url, settle_at FROM charges WHERE idempotency_key = ?", key
    ).map {
      Row(
        key: key, paymentId: try $0.string(0), state: try $0.string(1), message: try $0.optionalString(2),
        actionURL: try $0.optionalString(3), settleAt: try $0.optionalDouble(4))
    }
  }

  /// The row's state; a slow charge whose time has come is approved (and written so).
  private func resolve(_ row: Row, in db: any SQLConnection) throws -> (PaymentState, Double?) {
    switch row.state {
    case "approved": return (.approved(paymentId: row.paymentId), nil)
    case "declined": return (.declined(paymentId: row.paymentId, message: row.message ?? "declined"), nil)
    case "requiresAction":
      return (.requiresAction(paymentId: row.paymentId, action: PaymentAction(url: row.actionURL ?? "")), nil)
    default:
      if let settleAt = row.settleAt, clock.now().timeIntervalSince1970 >= settleAt {
        try db.execute("UPDATE charges SET state = 'approved' WHERE idempotency_key = ?", row.key)
        return (.approved(paymentId: row.paymentId), nil)
      }
      return (.processing(paymentId: row.paymentId), row.settleAt)
    }
  }
}
