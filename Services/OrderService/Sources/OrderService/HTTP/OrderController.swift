import Foundation
import GrocerAuth
import GrocerContracts
import GrocerCore
import GrocerHTTP
import GrocerRuntime
import Synchronization

/// OrderService's HTTP API: placing an order exactly once, reading it back by id or by key, and
/// the payment provider's callback.
struct OrderController: Sendable {
  let store: OrderStore
  let saga: CheckoutSaga
  let payments: any PaymentProvider
  let webhook: WebhookSignature
  let clock: any WallClock
  /// How long `POST /v1/orders` waits for the saga before answering 202 `pending`.
  let requestDeadline: Duration
  /// Where that wait's limit is kept.
  let deadlines: Deadlines

  var routes: [Route] {
    [
      Route.answeredByCallback("POST", "/v1/orders", auth: .required, place),
      Route("GET", "/v1/orders", auth: .required, findByKey),
      Route("GET", "/v1/orders/{id}", auth: .required, getOrder),
      // The provider signs its callbacks (`Grocer-Signature`); no user token.
      Route("POST", "/v1/payments/{paymentId}/events", paymentEvent),
    ]
  }

  // MARK: - POST /v1/orders

  /// Checked, then the attempt is recorded on the database's writer queue (joining its next group
  /// commit) and the saga drives the order, whose own task answers: no Swift task of the
  /// request's own in between (`Route.answeredByCallback`). Past `requestDeadline` a `deadlines`
  /// entry answers 202 `pending`, and the saga goes on whatever happens to this request.
  @Sendable func place(
    _ request: HTTPRequest, _ done: @escaping @Sendable (Result<HTTPResponse, any Error>) -> Void
  ) {
    let begin: @Sendable (OrderStore) throws -> OrderStore.Begin
    do { begin = try Self.attempt(request) } catch {
      done(.failure(error))
      return
    }
    let (store, saga, deadline, deadlines) = (self.store, self.saga, requestDeadline, self.deadlines)
    store.database.submitWrite({ try begin(store) }) { result in
      switch result {
      case .failure:
        done(.failure(HTTPError.storageTrouble(database: Self.database)))
      case .success(.replay(let reply)):
        done(.success(Self.response(reply, replayed: true)))
      case .success(.inProgress):
        done(.failure(Self.http(.inProgress)))
      case .success(.keyReused):
        done(.failure(Self.http(.keyReused)))
      case .success(.started(let order)):
        answer(
          within: deadline, on: deadlines, late: { SagaOutcome.pending(orderId: order.orderId) },
          starting: { give in saga.drive(order, then: give) },
          then: { done(Self.result(of: $0)) })
      }
    }
  }

  /// What a placing request answers for where the saga left its order.
  static func result(of outcome: SagaOutcome) -> Result<HTTPResponse, any Error> {
    switch outcome {
    case .answered(let reply): .success(response(reply, replayed: false))
    case .unavailable(let error): .failure(http(error))
    case .pending(let orderId): .success(response(.pending(orderId: orderId), replayed: false))
    }
  }

  /// The checks of `POST /v1/orders` (caller, key, body), and the attempt it then records.
  static func attempt(_ request: HTTPRequest) throws -> @Sendable (OrderStore) throws -> OrderStore.Begin {
    let user = try Self.user(request)
    let key: String
    let body: PlaceOrderBody
    let method: PaymentMethod
    do {
      key = try IdempotencyKey.validate(request.headers[IdempotencyKey.header])
      try request.requireJSONBody()
      body = try PlaceOrderBody.decode(from: request.body, mappingErrors: OrderError.init)
      method = try body.validate()
    } catch let error as OrderError {
      throw Self.http(error)
    }
    let correlation = request.requestID
    return { try $0.begin(user: user, key: key, body: body, method: method, correlationID: correlation) }
  }

  // MARK: - Reading

  @Sendable func findByKey(_ request: HTTPRequest) async throws -> HTTPResponse {
    let user = try Self.user(request)
    guard let key = request.query["idempotencyKey"], !key.isEmpty else {
      throw HTTPError.badRequest(
        code: "idempotencyKeyRequired",
        detail: "ask with `?idempotencyKey=` (the key the order was sent with)")
    }
    let store = self.store
    guard
      let found = try await Self.storage({ try await runBlocking { try store.lookup(user: user, key: key) } })
    else {
      throw HTTPError.notFound(
        code: "orderNotFound", detail: "no order was received with this key; send it again with the same key")
    }
    return try HTTPResponse.json(
      value: ["orderId": JSONValue.string(found.orderId), "status": .string(found.status.rawValue)],
      headers: ["Cache-Control": "private, no-store"])
  }

  @Sendable func getOrder(_ request: HTTPRequest) async throws -> HTTPResponse {
    let user = try Self.user(request)
    let id = try request.pathParameter("id")
    let store = self.store
    guard let order = try await Self.storage({ try await runBlocking { try store.order(id, user: user) } })
    else {
      throw Self.http(.orderNotFound(id))
    }
    return try HTTPResponse.json(value: order.view, headers: ["Cache-Control": "private, no-store"])
  }

  // MARK: - The provider's callback

  /// `POST /v1/payments/{paymentId}/events` `{ "type": "payment.succeeded" | "payment.failed",
  /// "message"? }`, signed. Answers `{ orderId, status }` once the verdict is applied.
  struct EventBody: StrictBody {
    static let allowedKeys: Set<String> = ["type", "message"]
    var type: String
    var message: String?
  }

  @Sendable func paymentEvent(_ request: HTTPRequest) async throws -> HTTPResponse {
    let paymentId = try request.pathParameter("paymentId")
    guard
      webhook.isValid(
        request.headers[WebhookSignature.header], body: request.body, for: paymentId, now: clock.now())
    else {
      throw HTTPError(
        status: 401, code: "invalidSignature",
        detail:
          "the callback's `\(WebhookSignature.header)` is missing, wrong, too old or for another payment")
    }
    let body: EventBody
    do {
      try request.requireJSONBody()
      body = try EventBody.decode(from: request.body, mappingErrors: OrderError.init)
    } catch let error as OrderError {
      throw Self.http(error)
    }
    guard let kind = PaymentEvent.Kind(rawValue: body.type) else {
      throw HTTPError.unprocessable(
        code: "unknownEventType", detail: "`type` must be payment.succeeded or payment.failed")
    }
    // The verdict is recorded at the provider first, so it is never lost, even when it overtakes
    // the provider's answer to our charge (the order does not name the payment yet).
    let settled: PaymentState?
    do {
      settled = try await payments.settle(
        PaymentEvent(paymentId: paymentId, kind: kind, message: body.message))
    } catch {
      throw HTTPError.serviceUnavailable(retryAfter: 5, detail: "the payment provider did not answer")
    }
    guard settled != nil else {
      throw HTTPError.notFound(code: "paymentNotFound", detail: "there is no payment \(paymentId)")
    }
    let store = self.store
    guard
      let orderId = try await Self.storage({
        try await runBlocking { try store.orderId(paymentId: paymentId) }
      })
    else {
      // Our charge call has not returned yet; the recovery poll reads the verdict anyway.
      throw HTTPError.serviceUnavailable(
        retryAfter: 2, detail: "the order of payment \(paymentId) is still being recorded; send it again")
    }
    // A drive under way (one that had just heard "needs action") is joined; if it left the order
    // waiting, one more drive reads the verdict now instead of at the next poll.
    if case .answered(let reply) = await saga.drive(orderId), reply.status == 202 {
      _ = await saga.drive(orderId)
    }
    guard let order = try await Self.storage({ try await runBlocking { try store.order(orderId) } }) else {
      throw Self.http(.orderNotFound(orderId))
    }
    return try HTTPResponse.json(
      value: ["orderId": JSONValue.string(orderId), "status": .string(order.status.rawValue)])
  }

  // MARK: - Helpers

  static func user(_ request: HTTPRequest) throws -> String {
    guard let principal = request.principal else { throw HTTPError.unauthorized() }
    return principal.subject
  }

  static func response(_ reply: OrderReply, replayed: Bool) -> HTTPResponse {
    var headers: HTTPHeaders = ["Content-Type": reply.contentType, "Cache-Control": "private, no-store"]
    if replayed { headers.add("Idempotent-Replayed", "true") }
    return HTTPResponse(status: reply.status, headers: headers, body: reply.body)
  }

  static func http(_ error: OrderError) -> HTTPError {
    switch error.kind {
    case .malformed: .badRequest(code: error.code, detail: error.detail)
    case .invalid: .unprocessable(code: error.code, detail: error.detail)
    case .notFound: .notFound(code: error.code, detail: error.detail)
    case .inProgress:
      HTTPError(status: 409, code: error.code, detail: error.detail, headers: ["Retry-After": "1"])
    case .unavailable:
      HTTPError(status: 503, code: error.code, detail: error.detail, headers: ["Retry-After": "2"])
    case .unauthenticated: HTTPError(status: 401, code: error.code, detail: error.detail)
    }
  }

  /// Storage trouble is a 503 with `Retry-After`, never a 500.
  static func storage<T: Sendable>(_ body: () async throws -> T) async throws -> T {
    try await answeringStorageTroubleAs503(database: database, body)
  }

  /// The database a 503 names.
  static let database = "order"

}
