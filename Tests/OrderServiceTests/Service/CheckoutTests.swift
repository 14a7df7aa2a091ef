import Foundation
import GrocerAMQP
import GrocerAuth
import GrocerContracts
import GrocerCore
import GrocerHTTP
import GrocerHTTPTesting
import GrocerRabbitMQ
import GrocerStorage
import GrocerTestSupport
import Testing

@testable import OrderService

/// The checkout against real StockService and CartService over the real broker.
@Suite(.serialized) struct CheckoutTests {
  init() throws { try TestBroker.ensureRunning() }

  @Test func anOrderIsConfirmedStockCommittedAndTheCartEmptied() async throws {
    try await OrderWorld.with { world in
      try await world.put("p1", 2)
      let cart = try await world.put("p2", 1)
      #expect(cart.totals.total.minorUnits == 250 * 2 + 50 + 400 + 199)

      let response = await world.placeOrder(key: "k-happy", version: cart.version)
      #expect(response.status == 201, "\(response.bodyString)")
      #expect(response.headers["Idempotent-Replayed"] == nil)
      let placed = try response.json(as: PlacedOrder.self)
      #expect(placed.status == "confirmed")
      #expect(placed.total == cart.totals.total)

      // One charge, of the cart's total, under a key derived from the order.
      let charges = try world.charges()
      #expect(charges.count == 1)
      #expect(charges.first?.amount == cart.totals.total)
      #expect(charges.first?.reference == placed.orderId)
      #expect(charges.first?.state == "approved")

      // The order reads back with its lines; the key finds it.
      let read = await world.orderClient.get("/v1/orders/\(placed.orderId)", headers: world.customer())
      #expect(read.status == 200, "\(read.bodyString)")
      let view = try read.json(as: OrderView.self)
      #expect(view.status == .confirmed)
      #expect(view.hub == world.hub)
      #expect(view.lines.map(\.sku) == cart.lines.map(\.sku))
      #expect(view.totals == cart.totals)
      let byKey = await world.orderClient.get("/v1/orders?idempotencyKey=k-happy", headers: world.customer())
      #expect(byKey.status == 200)
      #expect(byKey.bodyString.contains(placed.orderId) && byKey.bodyString.contains("confirmed"))

      // order.confirmed reaches StockService (committed: on hand down, nothing held) and
      // CartService (the cart is emptied with a new version).
      let committed = await eventually(timeout: .seconds(15)) {
        (try? world.stockCounts("p1")).map { $0 == (18, 0) } ?? false
      }
      #expect(committed, "stock: \(String(describing: try? world.stockCounts("p1")))")
      #expect(try world.stockCounts("p2") == (4, 0))
      let emptied = await eventually(timeout: .seconds(15)) {
        (try? await world.cart().lines.isEmpty) == true
      }
      #expect(emptied)
    }
  }

  @Test func tenConcurrentRequestsWithOneKeyPlaceOneOrderAndChargeOnce() async throws {
    try await OrderWorld.with { world in
      let cart = try await world.put("p1", 3)
      let responses = await withTaskGroup(of: HTTPResponse.self) { group in
        for _ in 0..<10 { group.addTask { await world.placeOrder(key: "k-burst", version: cart.version) } }
        var all: [HTTPResponse] = []
        for await response in group { all.append(response) }
        return all
      }
      let firsts = responses.filter { $0.status == 201 && $0.headers["Idempotent-Replayed"] == nil }
      let replays = responses.filter { $0.status == 201 && $0.headers["Idempotent-Replayed"] == "true" }
      let inProgress = responses.filter { $0.status == 409 }
      #expect(firsts.count == 1, "\(responses.map { "\($0.status) \($0.bodyString)" })")
      #expect(replays.count + inProgress.count == 9)
      for response in inProgress {
        #expect(response.headers["Retry-After"] != nil)
        #expect(try response.json(as: Problem.self).code == "requestInProgress")
      }
      // Every 201 is the same order, byte for byte.
      #expect(Set(replays.map(\.body) + firsts.map(\.body)).count == 1)
      #expect(try world.charges().count == 1)
      #expect(try world.order.store.countsBySteps() == [.confirmed: 1])
    }
  }

  @Test func aRetryAfterALostReplyGetsTheSameOrder() async throws {
    try await OrderWorld.with { world in
      let cart = try await world.put("p1", 1)
      let cart2 = try await world.put("p2", 1)
      _ = cart
      // The first reply is "lost": the client only knows it sent the request.
      _ = await world.placeOrder(key: "k-lost", version: cart2.version)
      let retry = await world.placeOrder(key: "k-lost", version: cart2.version)
      #expect(retry.status == 201, "\(retry.bodyString)")
      #expect(retry.headers["Idempotent-Replayed"] == "true")
      let again = await world.placeOrder(key: "k-lost", version: cart2.version)
      #expect(again.body == retry.body)
      #expect(try world.charges().count == 1)
    }
  }

  @Test func aKeyReusedWithAnotherBodyIsRefused() async throws {
    try await OrderWorld.with { world in
      let cart = try await world.put("p1", 2)
      let first = await world.placeOrder(key: "k-reuse", version: cart.version)
      #expect(first.status == 201, "\(first.bodyString)")
      let other = await world.placeOrder(key: "k-reuse", version: cart.version, token: "tok_other")
      #expect(other.status == 422)
      #expect(try other.json(as: Problem.self).code == "idempotencyKeyReused")
      #expect(try world.charges().count == 1)
    }
  }

  @Test func aStaleCartVersionIs409WithTheCartAndNoCharge() async throws {
    try await OrderWorld.with { world in
      let seen = try await world.put("p1", 2)
      let current = try await world.put("p2", 1)
      let response = await world.placeOrder(key: "k-stale", version: seen.version)
      #expect(response.status == 409, "\(response.bodyString)")
      let body = try response.json(as: PlacedOrder.self)
      #expect(body.status == "cartChanged")
      #expect(body.cart == current)
      #expect(try world.charges().isEmpty)
      #expect(try world.stockCounts("p1") == (20, 0), "nothing reserved")
      // The answer is the key's: replayed as it was.
      let replay = await world.placeOrder(key: "k-stale", version: seen.version)
      #expect(replay.status == 409)
      #expect(replay.headers["Idempotent-Replayed"] == "true")
      #expect(replay.body == response.body)
      // It never became an order.
      #expect(
        await world.orderClient.get("/v1/orders/\(body.orderId)", headers: world.customer()).status == 404)
    }
  }

  @Test func aShortfallAdjustsTheCartAnd409sWithIt() async throws {
    try await OrderWorld.with { world in
      let cart = try await world.put("p2", 4)
      // Another customer takes 3 of the 5 coffees first. StockService's events are held back
      // (its relay stopped), so the cart cannot have learnt of it: the reservation finds out.
      let relay = try #require(world.stock.services.first { $0 is OutboxRelay })
      await relay.shutdown()
      let other = try await world.put("p2", 3, user: "u2")
      #expect(await world.placeOrder(key: "k-other", version: other.version, user: "u2").status == 201)
      let response = await world.placeOrder(key: "k-short", version: cart.version)
      if response.status == 409 {
        let body = try response.json(as: PlacedOrder.self)
        #expect(body.status == "cartChanged")
        let adjusted = try #require(body.cart)
        #expect(adjusted.lines.first { $0.sku == "p2" }?.quantity == 2)
        #expect(adjusted.adjustments.map(\.change).contains(.reduced(sku: "p2", to: 2)))
      } else {
        Issue.record("expected 409, got \(response.status) \(response.bodyString)")
      }
      #expect(try world.charges().count == 1, "only the other customer was charged")
      #expect(try world.stockCounts("p2").held <= 3)
    }
  }

  @Test func aDeclineIs402AndTheStockComesBack() async throws {
    try await OrderWorld.with { world in
      try await world.put("p3", 2)
      let cart = try await world.put("p2", 1)
      let response = await world.placeOrder(
        key: "k-decline", version: cart.version, token: SimulatedPaymentProvider.declineToken)
      #expect(response.status == 402, "\(response.bodyString)")
      let body = try response.json(as: PlacedOrder.self)
      #expect(body.status == "declined")
      #expect(body.message?.isEmpty == false)
      let released = await eventually(timeout: .seconds(15)) {
        (try? world.stockCounts("p3")).map { $0 == (2, 0) } ?? false
      }
      #expect(released, "\(String(describing: try? world.stockCounts("p3")))")
      #expect(try world.charges().map(\.state) == ["declined"])
      // The cart is still there to try again with another card.
      #expect(try await world.cart().lines.count == 1)
      let read = await world.orderClient.get("/v1/orders/\(body.orderId)", headers: world.customer())
      #expect(try read.json(as: OrderView.self).status == .declined)
    }
  }

  @Test func threeDSecureApprovedByTheCallbackConfirms() async throws {
    try await OrderWorld.with { world in
      let cart = try await world.put("p1", 4)
      let response = await world.placeOrder(
        key: "k-3ds", version: cart.version, token: SimulatedPaymentProvider.threeDSToken)
      #expect(response.status == 202, "\(response.bodyString)")
      let body = try response.json(as: PlacedOrder.self)
      #expect(body.status == "needsAction")
      let action = try #require(body.action)
      #expect(action.type == "threeDSecure")
      let paymentId = try #require(body.paymentId)
      #expect(
        try await world.orderClient.get("/v1/orders/\(body.orderId)", headers: world.customer())
          .json(as: OrderView.self).status == .needsAction)

      // A callback without a valid signature changes nothing.
      let forged = await world.orderClient.send(
        "POST", "/v1/payments/\(paymentId)/events",
        headers: ["Content-Type": "application/json", WebhookSignature.header: "t=1,v1=00"],
        body: #"{"type":"payment.succeeded"}"#)
      #expect(forged.status == 401)
      #expect(try world.storedOrder(body.orderId)?.status == .needsAction)

      let settled = await world.paymentCallback(paymentId, #"{"type":"payment.succeeded"}"#)
      #expect(settled.status == 200, "\(settled.bodyString)")
      #expect(settled.bodyString.contains("confirmed"))
      let view = try await world.orderClient.get("/v1/orders/\(body.orderId)", headers: world.customer())
        .json(as: OrderView.self)
      #expect(view.status == .confirmed)
      // A repeated callback, or a contrary one, changes nothing.
      let late = await world.paymentCallback(paymentId, #"{"type":"payment.failed"}"#)
      #expect(late.status == 200)
      #expect(try world.storedOrder(body.orderId)?.status == .confirmed)
      #expect(try world.charges().map(\.state) == ["approved"])
      // The key now answers the verdict.
      let replay = await world.placeOrder(
        key: "k-3ds", version: cart.version, token: SimulatedPaymentProvider.threeDSToken)
      #expect(replay.status == 201)
      let committed = await eventually(timeout: .seconds(15)) {
        (try? world.stockCounts("p1")).map { $0 == (16, 0) } ?? false
      }
      #expect(committed)
    }
  }

  @Test func threeDSecureFailedByTheCallbackDeclines() async throws {
    try await OrderWorld.with { world in
      let cart = try await world.put("p1", 1)
      let cart2 = try await world.put("p2", 1)
      _ = cart
      let response = await world.placeOrder(
        key: "k-3ds-fail", version: cart2.version, token: SimulatedPaymentProvider.threeDSToken)
      #expect(response.status == 202, "\(response.bodyString)")
      let body = try response.json(as: PlacedOrder.self)
      let settled = await world.paymentCallback(
        try #require(body.paymentId), #"{"type":"payment.failed","message":"The bank refused."}"#)
      #expect(settled.status == 200, "\(settled.bodyString)")
      let view = try await world.orderClient.get("/v1/orders/\(body.orderId)", headers: world.customer())
        .json(as: OrderView.self)
      #expect(view.status == .declined)
      #expect(view.message == "The bank refused.")
      let released = await eventually(timeout: .seconds(15)) {
        (try? world.stockCounts("p2")).map { $0 == (5, 0) } ?? false
      }
      #expect(released)
    }
  }

  @Test func aThreeDSecureCheckNeverFinishedIsCancelledAtItsDeadline() async throws {
    try await OrderWorld.with(configure: { $0.actionTimeout = 60 }) { world in
      let cart = try await world.put("p1", 2)
      let response = await world.placeOrder(
        key: "k-3ds-late", version: cart.version, token: SimulatedPaymentProvider.threeDSToken)
      let body = try response.json(as: PlacedOrder.self)
      world.clock.advance(by: 61)
      let declined = await eventually(timeout: .seconds(10)) {
        (try? world.storedOrder(body.orderId)?.status) == .declined
      }
      #expect(declined)
      #expect(try world.storedOrder(body.orderId)?.message == "cancelled")
      #expect(try world.charges().map(\.state) == ["declined"])
    }
  }

  @Test func aPaymentThatHangsIsAnswered202PendingAndSettledLater() async throws {
    try await OrderWorld.with(configure: { $0.requestDeadline = 0.3 }) { world in
      let cart = try await world.put("p1", 2)
      let response = await world.placeOrder(
        key: "k-hang", version: cart.version, token: SimulatedPaymentProvider.timeoutToken)
      #expect(response.status == 202, "\(response.bodyString)")
      let body = try response.json(as: PlacedOrder.self)
      #expect(body.status == "pending")
      // Still running: the key says so, and a resend is told to wait.
      #expect(
        await world.orderClient.get("/v1/orders?idempotencyKey=k-hang", headers: world.customer()).bodyString
          .contains("pending"))
      let resend = await world.placeOrder(
        key: "k-hang", version: cart.version, token: SimulatedPaymentProvider.timeoutToken)
      #expect(resend.status == 409)
      #expect(resend.headers["Retry-After"] != nil)
      // Our wait for the provider ends (the charge is postponed), then the provider settles (its
      // time passes) and recovery looks the charge up by key.
      let postponed = await eventually { (try? world.storedOrder(body.orderId)?.retries ?? 0) ?? 0 >= 1 }
      #expect(postponed)
      world.clock.advance(by: 120)
      let confirmed = await eventually(timeout: .seconds(10)) {
        (try? world.storedOrder(body.orderId)?.status) == .confirmed
      }
      #expect(confirmed)
      #expect(try world.charges().count == 1)
      let replay = await world.placeOrder(
        key: "k-hang", version: cart.version, token: SimulatedPaymentProvider.timeoutToken)
      #expect(replay.status == 201)
      #expect(replay.headers["Idempotent-Replayed"] == "true")
    }
  }

  @Test func aCartServiceThatStoppedAnsweringIs503WithTheKeyFree() async throws {
    try await OrderWorld.with(configure: { $0.remoteTimeout = 0.5 }) { world in
      let cart = try await world.put("p1", 2)
      let responder = try #require(world.cart.services.first { $0 is AMQPRPCServer })
      await responder.shutdown()
      let response = await world.placeOrder(key: "k-cart-down", version: cart.version)
      #expect(response.status == 503, "\(response.bodyString)")
      #expect(response.headers["Retry-After"] != nil)
      #expect(
        await world.orderClient.get("/v1/orders?idempotencyKey=k-cart-down", headers: world.customer()).status
          == 404)
      #expect(try world.charges().isEmpty)
      #expect(try world.stockCounts("p1") == (20, 0))
    }
  }

  @Test func anEmptyCartIs422AndAnUnknownHub404() async throws {
    try await OrderWorld.with { world in
      let empty = try await world.cart(user: "u-empty")
      let response = await world.placeOrder(key: "k-empty", version: empty.version, user: "u-empty")
      #expect(response.status == 422, "\(response.bodyString)")
      #expect(try response.json(as: Problem.self).code == "emptyCart")
      let unknown = await world.orderClient.send(
        "POST", "/v1/orders", headers: world.customer().merging(["Idempotency-Key": "k-nohub"]) { $1 },
        body:
          #"{"hub":"nohub","cartVersion":1,"payment":{"method":"card","token":"t"},"deliverTo":{"lat":52.53,"lng":13.41}}"#
      )
      #expect(unknown.status == 404, "\(unknown.bodyString)")
      #expect(try unknown.json(as: Problem.self).code == "unknownHub")
      #expect(try world.charges().isEmpty)
    }
  }

  @Test func strangersSeeNeitherTheOrderNorTheKey() async throws {
    try await OrderWorld.with { world in
      let cart = try await world.put("p1", 2)
      let placed = try await world.placeOrder(key: "k-mine", version: cart.version).json(as: PlacedOrder.self)
      let stranger = world.customer("u-stranger")
      let order = await world.orderClient.get("/v1/orders/\(placed.orderId)", headers: stranger)
      #expect(order.status == 404)
      #expect(!order.bodyString.contains("Oat milk"))
      #expect(
        await world.orderClient.get("/v1/orders?idempotencyKey=k-mine", headers: stranger).status == 404)
      // The same key from another user is another user's attempt (their cart is empty).
      let theirs = await world.placeOrder(key: "k-mine", version: 0, user: "u-stranger")
      #expect(theirs.status == 422)
      #expect(theirs.headers["Idempotent-Replayed"] == nil)
      // No token at all.
      #expect(await world.orderClient.get("/v1/orders/\(placed.orderId)").status == 401)
    }
  }
}

extension OrderWorld {
  /// The provider's callback, signed as the provider signs it.
  func paymentCallback(_ paymentId: String, _ body: String, through client: TestClient? = nil) async
    -> HTTPResponse
  {
    let signature = WebhookSignature(secret: orderConfiguration.webhookSecret).sign(
      Array(body.utf8), for: paymentId, at: clock.now())
    return await (client ?? orderClient).send(
      "POST", "/v1/payments/\(paymentId)/events",
      headers: ["Content-Type": "application/json", WebhookSignature.header: signature], body: body)
  }
}
