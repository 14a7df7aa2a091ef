import Foundation
import GrocerAuth
import GrocerContracts
import GrocerCore
import GrocerHTTP
import GrocerTestSupport
import Synchronization
import Testing

@testable import OrderService

/// Defects found by the adversarial review of OrderService. Each test states the promise it
/// checks; they fail on the code as reviewed.
@Suite struct OrderReviewTests {

  // MARK: - The payment callback's signature

  /// The callback's signature covers `t` and the body only; the payment id is in the path and
  /// the body (`{"type":"payment.succeeded"}`) names no payment. So one genuine, signed
  /// "succeeded" callback (for a payment the attacker completed) is valid, for 5 minutes, for
  /// every other payment waiting for 3-D Secure: posting it to another payment's path approves
  /// that payment without its bank ever saying so.
  @Test func aSignedCallbackForOnePaymentDoesNotSettleAnother() async throws {
    let world = try ReviewHarness()
    world.neighboursAgree()
    let first = try await world.place(
      key: "k-a", token: SimulatedPaymentProvider.threeDSToken, user: "attacker"
    )
    .json(as: PlacedOrder.self)
    let second = try await world.place(
      key: "k-b", token: SimulatedPaymentProvider.threeDSToken, user: "victim"
    )
    .json(as: PlacedOrder.self)
    let paymentA = try #require(first.paymentId)
    let paymentB = try #require(second.paymentId)
    #expect(paymentA != paymentB)

    // The provider's genuine callback for payment A…
    let body = #"{"type":"payment.succeeded"}"#
    let header = world.signer.sign(Array(body.utf8), for: paymentA, at: world.clock.now())
    #expect(await world.callback(paymentA, body: body, header: header).status == 200)
    // …replayed against payment B must not be accepted.
    let replayed = await world.callback(paymentB, body: body, header: header)
    #expect(
      replayed.status == 401, "a callback signed for \(paymentA) settled \(paymentB): \(replayed.bodyString)")
    #expect(try world.store.order(second.orderId)?.status == .needsAction, "B was never approved by its bank")
  }

  // MARK: - Reservation answers

  /// StockService answers `rejected` with code `unavailable` ("the reservation could not be
  /// stored; ask again") when its own database fails (ReservationResponder). That is a
  /// dependency being down: 503 with the key free. The saga treats every `rejected` as final:
  /// 422 stored as the key's answer, replayed for 24 h, so the same request can never succeed.
  @Test func aReservationStockServiceCouldNotStoreIs503WithTheKeyFree() async throws {
    let world = try ReviewHarness()
    world.clients.cart.withLock {
      $0 = .reply(CartCheckoutReply(cart: OrderHTTPTests.cart, matches: true))
    }
    world.clients.stock.withLock {
      $0 = .reservation(
        ReservationReply(
          orderId: "", status: .rejected,
          error: RemoteError(code: "unavailable", detail: "the reservation could not be stored; ask again")))
    }
    let response = await world.place()
    #expect(response.status == 503, "\(response.bodyString)")
    #expect(await world.client.get("/v1/orders?idempotencyKey=k1", headers: world.headers()).status == 404)

    // StockService is back: the same request with the same key must now go through.
    world.neighboursAgree()
    let again = await world.place()
    #expect(again.status == 201, "\(again.bodyString)")
  }

  // MARK: - The reservation's time-out

  /// An order left at `reserved` (the process died right after the reservation) is carried on
  /// by recovery after a restart. If the restart comes after StockService's reservation
  /// time-out (10 min), the hold is gone, yet the saga charges the customer without asking
  /// StockService again: `reservation_expires_at` is written (`OrderStore.record(.reserved…)`) but
  /// never read. StockService then "confirms after expiry" and takes the goods off on hand,
  /// possibly goods already sold to someone else.
  @Test func aLapsedReservationIsNotChargedWithoutHoldingTheStockAgain() async throws {
    let world = try ReviewHarness()
    world.neighboursAgree()
    let orderId = try world.orderLeftAtReserved(reservationExpiresAt: world.clock.now() + 600)
    // The restart comes 11 minutes later; StockService has released the hold by now.
    world.clock.advance(by: 660)
    world.clients.stock.withLock {
      $0 = .reservation(
        ReservationReply(
          orderId: "", status: .rejected,
          error: RemoteError(code: "reservationReleased", detail: "the reservation was released")))
    }
    world.clients.asked.withLock { $0 = [] }
    _ = await world.saga.drive(orderId)
    let charges = try world.simulator.ledger()
    let askedStock = world.clients.asked.withLock { $0 }.contains("stock.reserve")
    #expect(
      charges.isEmpty || askedStock,
      "charged \(charges.map(\.amount)) on a reservation that lapsed 60 s earlier, without asking StockService"
    )
    #expect(try world.store.order(orderId)?.status != .confirmed)
  }

  // MARK: - A callback that overtakes the charge's answer

  /// The bank's verdict can reach us before the provider's answer to our charge call does (the
  /// customer is fast, or our call was slow). The controller looks the order up by payment id
  /// first, and the payment id is only written with `needsAction`: the callback gets 404
  /// `paymentNotFound` and is dropped before `settle`. With the simulator the verdict is then
  /// lost: the order waits for a verdict that never comes and is cancelled (declined) at the
  /// 3-D Secure deadline although the customer passed the check.
  @Test func aCallbackThatOvertakesTheChargeAnswerIsNotLost() async throws {
    let gate = Gate()
    let world = try ReviewHarness(wrap: { GatedProvider(inner: $0, gate: gate) })
    world.neighboursAgree()
    let placing = Task { await world.place(token: SimulatedPaymentProvider.threeDSToken) }
    // The provider has the payment (it is waiting for the bank) but has not answered us yet.
    let charged = try await eventually(timeout: .seconds(5)) { try world.simulator.ledger().count == 1 }
    try #require(charged)
    let paymentId = try #require(try world.simulator.ledger().first?.paymentId)
    let early = await world.callback(paymentId, body: #"{"type":"payment.succeeded"}"#)
    gate.open()
    let placed = await placing.value
    #expect(placed.status == 202, "\(placed.bodyString)")
    #expect(
      early.status != 404 || early.status >= 500,
      "the provider was told its payment does not exist: \(early.bodyString)")
    // Whatever the first answer, the verdict must not be lost: one more drive (the poll) finds it.
    let orderId = try placed.json(as: PlacedOrder.self).orderId
    world.clock.advance(by: 31)
    _ = await world.saga.drive(orderId)
    #expect(
      try world.store.order(orderId)?.status == .confirmed, "the bank approved, the order is not confirmed")
  }

  // MARK: - The payment time-out

  /// `within` races the call against a sleep in a task group, but a task group always waits
  /// for all of its children: a provider call that does not stop on cancellation (a blocking
  /// client, a stuck connection) holds the drive for as long as it takes, whatever
  /// `paymentTimeout` says. The recovery loop awaits every drive of its batch (and
  /// `PeriodicTask` runs one batch at a time), so one stuck call stalls the recovery of every
  /// other order.
  @Test func aProviderCallThatIgnoresCancellationStillTimesOut() async throws {
    let world = try ReviewHarness(
      paymentTimeout: .milliseconds(200), wrap: { StubbornProvider(inner: $0, delay: 10) })
    world.neighboursAgree()
    let orderId = try world.orderLeftAtReserved(reservationExpiresAt: world.clock.now() + 600)
    try world.store.record(.charging(since: world.clock.now()), of: orderId, reply: nil, event: nil)
    let started = ContinuousClock.now
    let outcome = await world.saga.drive(orderId)
    let took = ContinuousClock.now - started
    #expect(outcome == .pending(orderId: orderId))
    // Far below the provider's 10 s, with room for a loaded machine (parallel tests took 1.5 s).
    #expect(took < .seconds(5), "a 200 ms payment time-out took \(took)")
  }

  // MARK: - The attempt's record

  /// The request's drive starts from the order `begin` hands back instead of reading it: it must
  /// be the order exactly as stored, or the first step would work from something else.
  @Test func beginHandsBackTheOrderExactlyAsStored() async throws {
    let world = try ReviewHarness()
    let body = try PlaceOrderBody.decode(
      from: Data(
        #"{"hub":"h1","cartVersion":3,"payment":{"method":"applePay","token":"tok"},"deliverTo":{"lat":52.520008,"lng":13.404954}}"#
          .utf8), mappingErrors: OrderError.init)
    guard
      case .started(let started) = try world.store.begin(
        user: "u1", key: "k-record", body: body, method: .applePay, correlationID: "req-1")
    else { throw Failure("the attempt did not start") }
    let stored = try #require(try world.store.order(started.orderId))
    #expect(started == stored)
    #expect(started.deliverTo == GeoPoint(lat: 52.520008, lng: 13.404954))
    #expect(started.step == .received)
  }

  // MARK: - Key purge

  /// `abandon(compensate: true)` deletes the attempt but keeps the order row (`abandoned`);
  /// `purgeExpiredKeys` only finds orders through an expired attempt, so these rows are never
  /// purged (its doc: attempts "that never became orders" are forgotten with their keys).
  @Test func abandonedAttemptsAreForgottenWithTheirKeys() async throws {
    let world = try ReviewHarness()
    world.clients.cart.withLock {
      $0 = .reply(CartCheckoutReply(cart: OrderHTTPTests.cart, matches: true))
    }
    world.clients.stock.withLock { $0 = .fail(.noAnswer) }
    #expect(await world.place().status == 503)
    #expect(try world.store.countsBySteps() == [.abandoned: 1])
    world.clock.advance(by: 3600 * 48)
    try world.store.purgeExpiredKeys()
    #expect(try world.store.countsBySteps() == [:], "an abandoned attempt outlived its key by a day")
  }
}

// MARK: - Test doubles

/// Opens once; `wait` returns when it is open.
final class Gate: Sendable {
  private let isOpen = Atomic<Bool>(false)
  func open() { isOpen.store(true, ordering: .sequentiallyConsistent) }
  func wait() async {
    while !isOpen.load(ordering: .sequentiallyConsistent) { try? await Task.sleep(for: .milliseconds(10)) }
  }
}

/// The simulator, but its answer to a charge is held back until `gate` opens (a slow network).
struct GatedProvider: PaymentProvider {
  let inner: SimulatedPaymentProvider
  let gate: Gate
  func charge(_ request: ChargeRequest) async throws -> PaymentState {
    let state = try await inner.charge(request)
    await gate.wait()
    return state
  }
  func lookup(idempotencyKey: String) async throws -> PaymentState? {
    try await inner.lookup(idempotencyKey: idempotencyKey)
  }
  func cancel(idempotencyKey: String) async throws -> PaymentState? {
    try await inner.cancel(idempotencyKey: idempotencyKey)
  }
  func settle(_ event: PaymentEvent) async throws -> PaymentState? { try await inner.settle(event) }
}

/// The simulator, but its lookups take `delay` seconds and do not stop when cancelled (a
/// blocking client).
struct StubbornProvider: PaymentProvider {
  let inner: SimulatedPaymentProvider
  let delay: TimeInterval
  func charge(_ request: ChargeRequest) async throws -> PaymentState { try await inner.charge(request) }
  func lookup(idempotencyKey: String) async throws -> PaymentState? {
    await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
      DispatchQueue.global().asyncAfter(deadline: .now() + delay) { continuation.resume() }
    }
    return try await inner.lookup(idempotencyKey: idempotencyKey)
  }
  func cancel(idempotencyKey: String) async throws -> PaymentState? {
    try await inner.cancel(idempotencyKey: idempotencyKey)
  }
  func settle(_ event: PaymentEvent) async throws -> PaymentState? { try await inner.settle(event) }
}
