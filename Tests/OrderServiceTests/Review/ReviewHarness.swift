import Foundation
import GrocerAuth
import GrocerContracts
import GrocerCore
import GrocerHTTP
import GrocerHTTPTesting
import GrocerRuntime
import GrocerSQLite
import GrocerStorage
import Synchronization
import Testing

@testable import OrderService

/// OrderService with scripted neighbours (`ScriptedClients`), the real simulator (optionally
/// behind a wrapper) and a manual clock: the review's tests drive the saga and the HTTP API
/// directly.
struct ReviewHarness {
  static let secret = "order-review-secret"
  static let hookSecret = "review-hook"
  let clock = ManualClock()
  let clients = ScriptedClients()
  let store: OrderStore
  let simulator: SimulatedPaymentProvider
  let saga: CheckoutSaga
  let client: TestClient
  let signer = WebhookSignature(secret: ReviewHarness.hookSecret)

  init(
    paymentTimeout: Duration = .seconds(2), actionTimeout: TimeInterval = 480,
    paymentGiveUp: TimeInterval = 900,
    wrap: (SimulatedPaymentProvider) -> any PaymentProvider = { $0 }
  ) throws {
    let directory = NSTemporaryDirectory() + "grocer-order-review-\(UUID().uuidString)"
    let database = try SQLiteDatabase(
      path: directory + "/order.sqlite", migrations: OrderSchema.migrations, logger: .discarding())
    store = OrderStore(database: database, clock: clock, ids: SequentialIDs(prefix: "x"), keyRetention: 3600)
    simulator = try SimulatedPaymentProvider(
      path: directory + "/sim.sqlite", clock: clock, ids: SequentialIDs(prefix: "p"), hang: 1,
      logger: .discarding())
    let payments = wrap(simulator)
    let deadlines = Deadlines()
    saga = CheckoutSaga(
      store: store, clients: clients, payments: payments, clock: clock, logger: .discarding(),
      paymentTimeout: paymentTimeout, actionTimeout: actionTimeout, paymentGiveUp: paymentGiveUp,
      deadlines: deadlines)
    var router = Router(
      verifier: HS256Verifier(secret: Self.secret, clock: clock), metrics: MetricsRegistry(),
      logger: .discarding())
    router.add(
      OrderController(
        store: store, saga: saga, payments: payments, webhook: signer, clock: clock,
        requestDeadline: .seconds(5), deadlines: deadlines
      ).routes)
    client = TestClient(router)
  }

  func headers(_ user: String = "u1", key: String? = "k1") -> [String: String] {
    let token = HS256Signer(secret: Self.secret).sign(
      claims: TokenClaims(
        subject: user, role: .customer, hubs: [], issuedAt: clock.now(), expiresAt: clock.now() + 24 * 3600))
    var headers = ["Authorization": "Bearer \(token)", "Content-Type": "application/json"]
    headers["Idempotency-Key"] = key
    return headers
  }

  static func body(token: String = "tok") -> String {
    #"{"hub":"h1","cartVersion":3,"payment":{"method":"card","token":"\#(token)"},"deliverTo":{"lat":52.53,"lng":13.41}}"#
  }

  /// The neighbours agree: the cart matches, the stock is held for ten minutes.
  func neighboursAgree() {
    clients.cart.withLock { $0 = .reply(CartCheckoutReply(cart: OrderHTTPTests.cart, matches: true)) }
    clients.stock.withLock { $0 = .reservation(.reserved(orderId: "", expiresAt: clock.now() + 600)) }
  }

  func place(key: String = "k1", token: String = "tok", user: String = "u1") async -> HTTPResponse {
    await client.send("POST", "/v1/orders", headers: headers(user, key: key), body: Self.body(token: token))
  }

  /// The provider's signed callback for `paymentId`, exactly as the provider would send it.
  func callback(_ paymentId: String, body: String, header: String? = nil) async -> HTTPResponse {
    let header = header ?? signer.sign(Array(body.utf8), for: paymentId, at: clock.now())
    return await client.send(
      "POST", "/v1/payments/\(paymentId)/events",
      headers: ["Content-Type": "application/json", WebhookSignature.header: header], body: body)
  }

  /// Records an attempt and carries it, through the store only, to `reserved` (as a process that
  /// died right after the reservation would have left it).
  func orderLeftAtReserved(key: String = "k-crash", reservationExpiresAt: Date) throws -> String {
    let body = try PlaceOrderBody.decode(from: Data(Self.body().utf8), mappingErrors: OrderError.init)
    guard
      case .started(let started) = try store.begin(
        user: "u1", key: key, body: body, method: .card, correlationID: nil)
    else { throw Failure("the attempt did not start") }
    let orderId = started.orderId
    try store.record(.priced(OrderHTTPTests.cart), of: orderId, reply: nil, event: nil)
    // The step as a drive that held the goods and died before the charge step left it (the
    // checkout now records both at once; an order stored by an older version may be here).
    try store.database.write { db in
      try db.execute(
        "UPDATE orders SET step = 'reserved', reservation_expires_at = ? WHERE order_id = ?",
        reservationExpiresAt.timeIntervalSince1970, orderId)
    }
    return orderId
  }
}
