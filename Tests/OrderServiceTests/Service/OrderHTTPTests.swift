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

/// Answers the checkout's questions from a script: a stand-in for CartService and StockService
/// in tests of OrderService's own rules (what it does when they do not answer).
final class ScriptedClients: CheckoutClients {
  enum Answer: Sendable {
    case reply(CartCheckoutReply)
    case reservation(ReservationReply)
    case fail(RemoteCallError)
  }

  let cart = Mutex<Answer?>(nil)
  let stock = Mutex<Answer?>(nil)
  let asked = Mutex<[String]>([])

  func askCart(_ request: CartCheckoutRequest) async throws -> CartCheckoutReply {
    asked.withLock { $0.append("cart.\(request.kind.rawValue)") }
    switch cart.withLock({ $0 }) {
    case .reply(let reply)?: return reply
    case .fail(let error)?: throw error
    default: throw RemoteCallError.noAnswer
    }
  }

  func reserve(_ request: ReservationRequest) async throws -> ReservationReply {
    asked.withLock { $0.append("stock.reserve") }
    switch stock.withLock({ $0 }) {
    case .reservation(let reply)?:
      return ReservationReply(
        orderId: request.orderId, status: reply.status, shortfall: reply.shortfall,
        expiresAt: reply.expiresAt,
        error: reply.error)
    case .fail(let error)?: throw error
    default: throw RemoteCallError.noAnswer
    }
  }
}

/// OrderService's own rules over HTTP, with its neighbours scripted: bad input, strangers, and
/// neighbours that do not answer. (The checkout with the real neighbours is `CheckoutTests`.)
@Suite struct OrderHTTPTests {
  static let secret = "order-http-secret"
  let clock = ManualClock()
  let clients = ScriptedClients()
  let store: OrderStore
  let payments: SimulatedPaymentProvider
  let client: TestClient
  let metrics = MetricsRegistry()

  init() throws {
    let directory = NSTemporaryDirectory() + "grocer-order-http-\(UUID().uuidString)"
    let database = try SQLiteDatabase(
      path: directory + "/order.sqlite", migrations: OrderSchema.migrations, logger: .discarding())
    store = OrderStore(database: database, clock: clock, ids: SequentialIDs(prefix: "x"), keyRetention: 3600)
    payments = try SimulatedPaymentProvider(
      path: directory + "/sim.sqlite", clock: clock, ids: SequentialIDs(prefix: "p"), hang: 1,
      logger: .discarding())
    let deadlines = Deadlines()
    let saga = CheckoutSaga(
      store: store, clients: clients, payments: payments, clock: clock, logger: .discarding(),
      paymentTimeout: .seconds(2), actionTimeout: 600, paymentGiveUp: 900, deadlines: deadlines,
      metrics: metrics)
    var router = Router(
      verifier: HS256Verifier(secret: Self.secret, clock: clock), metrics: MetricsRegistry(),
      logger: .discarding())
    router.add(
      OrderController(
        store: store, saga: saga, payments: payments, webhook: WebhookSignature(secret: "hook"), clock: clock,
        requestDeadline: .seconds(5), deadlines: deadlines
      ).routes)
    client = TestClient(router)
  }

  func headers(_ user: String = "u1", key: String? = "k1") -> [String: String] {
    let token = HS256Signer(secret: Self.secret).sign(
      claims: TokenClaims(
        subject: user, role: .customer, hubs: [], issuedAt: clock.now(), expiresAt: clock.now() + 600))
    var headers = ["Authorization": "Bearer \(token)", "Content-Type": "application/json"]
    headers["Idempotency-Key"] = key
    return headers
  }

  static let body =
    #"{"hub":"h1","cartVersion":3,"payment":{"method":"card","token":"tok"},"deliverTo":{"lat":52.53,"lng":13.41}}"#

  static let cart = CartView(
    hub: "h1", version: 3,
    lines: [
      CartLineView(
        sku: "p1", name: "Oat milk", quantity: 2, unitPrice: Money(minorUnits: 500, currency: "EUR"),
        deposit: nil,
        lineTotal: Money(minorUnits: 1000, currency: "EUR"))
    ], adjustments: [], promo: nil,
    totals: CartTotals(
      subtotal: .init(minorUnits: 1000, currency: "EUR"), deposit: .zero("EUR"), deliveryFee: .zero("EUR"),
      smallBasketFee: .zero("EUR"), discount: .zero("EUR"), total: .init(minorUnits: 1000, currency: "EUR")),
    blocker: nil)

  func post(_ body: String = Self.body, headers: [String: String]? = nil) async -> HTTPResponse {
    await client.send("POST", "/v1/orders", headers: headers ?? self.headers(), body: body)
  }

  @Test func badRequestsAreRefusedBeforeAnythingStarts() async throws {
    var noKey = headers(key: nil)
    #expect(try await post(headers: noKey).json(as: Problem.self).code == "idempotencyKeyRequired")
    noKey["Idempotency-Key"] = "has space"
    #expect(await post(headers: noKey).status == 400)
    #expect(try await post("{not json").json(as: Problem.self).code == "malformedJSON")
    #expect(await post("[]").status == 400)
    var xml = headers()
    xml["Content-Type"] = "application/xml"
    #expect(await post(headers: xml).status == 415)
    let cash = await post(
      #"{"hub":"h1","cartVersion":3,"payment":{"method":"cash","token":"t"},"deliverTo":{"lat":52.53,"lng":13.41}}"#
    )
    #expect(cash.status == 422)
    #expect(try cash.json(as: Problem.self).code == "unknownPaymentMethod")
    var anonymous = headers()
    anonymous["Authorization"] = nil
    let unauthorized = await post(headers: anonymous)
    #expect(unauthorized.status == 401)
    #expect(unauthorized.headers["WWW-Authenticate"] == "Bearer")
    // None of them asked anyone or recorded a key.
    #expect(clients.asked.withLock { $0 }.isEmpty)
    #expect(try store.lookup(user: "u1", key: "k1") == nil)
  }

  @Test func anOrderDatabaseThatCannotRecordTheAttemptIs503AndAsksNoOne() async throws {
    store.database.close()
    let response = await post()
    #expect(response.status == 503, "\(response.bodyString)")
    #expect(response.headers["Retry-After"] == "1")
    #expect(try response.json(as: Problem.self).detail.contains("order database"))
    #expect(clients.asked.withLock { $0 }.isEmpty)
  }

  @Test func readsAnswerOnlyTheOwnerAndRefuseBadParameters() async throws {
    #expect(
      try await client.get("/v1/orders", headers: headers()).json(as: Problem.self).code
        == "idempotencyKeyRequired")
    #expect(await client.get("/v1/orders?idempotencyKey=never", headers: headers()).status == 404)
    #expect(await client.get("/v1/orders/ord_nothing", headers: headers()).status == 404)
    #expect(await client.send("DELETE", "/v1/orders/ord_nothing", headers: headers(), body: "").status == 405)
  }

  @Test func aCartServiceThatDoesNotAnswerIs503AndFreesTheKey() async throws {
    clients.cart.withLock { $0 = .fail(.noAnswer) }
    let response = await post()
    #expect(response.status == 503, "\(response.bodyString)")
    #expect(response.headers["Retry-After"] != nil)
    #expect(try response.json(as: Problem.self).code == "dependencyUnavailable")
    // Never received, as far as the client can tell: it resends with the same key, and it works.
    #expect(await client.get("/v1/orders?idempotencyKey=k1", headers: headers()).status == 404)
    clients.cart.withLock { $0 = .reply(CartCheckoutReply(cart: Self.cart, matches: true)) }
    clients.stock.withLock { $0 = .reservation(.reserved(orderId: "", expiresAt: clock.now() + 600)) }
    let again = await post()
    #expect(again.status == 201, "\(again.bodyString)")
    #expect(try payments.ledger().count == 1)
  }

  @Test func eachCheckoutStepIsTimedForOperators() async throws {
    clients.cart.withLock { $0 = .reply(CartCheckoutReply(cart: Self.cart, matches: true)) }
    clients.stock.withLock { $0 = .reservation(.reserved(orderId: "", expiresAt: clock.now() + 600)) }
    #expect(await post().status == 201)
    let text = metrics.render()
    // Pricing starts at `received`; the reservation and the charge run as one step from `priced`.
    for step in ["received", "priced"] {
      #expect(text.contains(#"checkout_step_seconds_count{step="\#(step)"} 1"#), "\(step)")
    }
    #expect(text.contains(#"checkout_outcomes_total{outcome="confirmed"} 1"#))
  }

  @Test func aReservationWithoutAnswerIsReleasedAnd503() async throws {
    clients.cart.withLock { $0 = .reply(CartCheckoutReply(cart: Self.cart, matches: true)) }
    clients.stock.withLock { $0 = .fail(.noAnswer) }
    let response = await post()
    #expect(response.status == 503, "\(response.bodyString)")
    // The reservation may exist: order.cancelled asks StockService to release it.
    let events = try store.database.read { db in
      try Outbox.pending(limit: 10, in: db).map { try JSON.decode(EventEnvelope.self, from: $0.message.body) }
    }
    #expect(events.map(\.type) == ["order.cancelled"])
    let ended = try #require(try events.first?.payload(as: OrderEnded.self))
    #expect(ended.reason == "reservationUnknown")
    #expect(ended.userId == "u1")
    #expect(ended.hub == "h1")
    #expect(try payments.ledger().isEmpty, "nothing charged")
  }

  @Test func aBrokerThatWentAwayIs503WithNothingToRelease() async throws {
    clients.cart.withLock { $0 = .reply(CartCheckoutReply(cart: Self.cart, matches: true)) }
    clients.stock.withLock { $0 = .fail(.notSent) }
    let response = await post()
    #expect(response.status == 503)
    #expect(try store.database.read { try Outbox.backlog(in: $0) } == 0)
  }

  @Test func confirmedOrdersCarryTheirPayloadToTheOutbox() async throws {
    clients.cart.withLock { $0 = .reply(CartCheckoutReply(cart: Self.cart, matches: true)) }
    clients.stock.withLock { $0 = .reservation(.reserved(orderId: "", expiresAt: clock.now() + 600)) }
    let placed = try await post(
      #"{"hub":"h1","cartVersion":3,"payment":{"method":"applePay","token":"tok"},"deliverTo":{"lat":52.5,"lng":13.4}}"#
    ).json(as: PlacedOrder.self)
    let envelope = try #require(
      try store.database.read { db in
        try Outbox.pending(limit: 10, in: db).map {
          try JSON.decode(EventEnvelope.self, from: $0.message.body)
        }
      }.first)
    #expect(envelope.type == "order.confirmed")
    #expect(envelope.subject == "order/" + placed.orderId)
    #expect(envelope.sequence == 1)
    let payload = try envelope.payload(as: OrderConfirmed.self)
    #expect(payload.userId == "u1")
    #expect(payload.hub == "h1")
    #expect(payload.lines.map(\.sku) == ["p1"])
    #expect(payload.totals == Self.cart.totals)
    #expect(payload.deliverTo == GeoPoint(lat: 52.5, lng: 13.4))
    #expect(payload.cartVersion == 3)
    // The token is not kept once the charge has its verdict.
    #expect(try store.order(placed.orderId)?.paymentToken == nil)
  }

  @Test func keysArePurgedAfterTheirRetentionButOrdersStay() async throws {
    clients.cart.withLock { $0 = .reply(CartCheckoutReply(cart: Self.cart, matches: true)) }
    clients.stock.withLock { $0 = .reservation(.reserved(orderId: "", expiresAt: clock.now() + 600)) }
    let placed = try await post().json(as: PlacedOrder.self)
    clients.cart.withLock { $0 = .reply(CartCheckoutReply(cart: Self.cart, matches: false)) }
    let stale = await post(headers: headers(key: "k-stale"))
    #expect(stale.status == 409)
    #expect(try store.purgeExpiredKeys() == 0)
    clock.advance(by: 3601)
    #expect(try store.purgeExpiredKeys() == 2)
    #expect(await client.get("/v1/orders?idempotencyKey=k1", headers: headers()).status == 404)
    #expect(await client.get("/v1/orders/\(placed.orderId)", headers: headers()).status == 200)
    #expect(try store.countsBySteps() == [.confirmed: 1], "the rejected attempt is gone with its key")
  }

  @Test func paymentCallbacksAreCheckedBeforeAnything() async throws {
    let signer = WebhookSignature(secret: "hook")
    func send(_ body: String, signed: Bool = true, type: String = "application/json") async -> HTTPResponse {
      var headers = ["Content-Type": type]
      if signed {
        headers[WebhookSignature.header] = signer.sign(Array(body.utf8), for: "pay_x", at: clock.now())
      }
      return await client.send("POST", "/v1/payments/pay_x/events", headers: headers, body: body)
    }
    #expect(await send(#"{"type":"payment.succeeded"}"#, signed: false).status == 401)
    #expect(try await send(#"{"type":"payment.maybe"}"#).json(as: Problem.self).code == "unknownEventType")
    #expect(await send(#"{"type":1}"#).status == 400)
    #expect(await send(#"{"type":"payment.succeeded"}"#, type: "text/plain").status == 415)
    #expect(try await send(#"{"type":"payment.succeeded"}"#).json(as: Problem.self).code == "paymentNotFound")
  }
}
