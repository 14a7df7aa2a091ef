import Foundation
import GrocerContracts
import GrocerCore
import Testing

@testable import OrderService

/// `CheckoutMachine` cell by cell: each step of the order, each answer the outside can give.
@Suite struct CheckoutMachineTests {
  static let now = Date(timeIntervalSince1970: 1_800_000_000)
  static let policy = CheckoutPolicy(paymentTimeout: .seconds(10), actionTimeout: 600, paymentGiveUp: 900)
  static let cart = OrderHTTPTests.cart
  static let reply = OrderReply(status: 201, body: Array("{}".utf8))

  static func order(_ step: SagaStep, _ change: (inout OrderRecord) -> Void = { _ in }) -> OrderRecord {
    var order = OrderRecord(
      orderId: "ord_1", userId: "u1", idempotencyKey: "k1", hub: "h1", cartVersion: 3, method: .card,
      paymentToken: "tok", deliverTo: GeoPoint(lat: 52.5, lng: 13.4), correlationID: "req-1", step: step,
      status: .pending, cart: step == .received ? nil : cart, reservationExpiresAt: nil, paymentId: nil,
      action: nil, message: nil, chargingSince: nil, actionDeadline: nil, retries: 0, createdAt: now,
      updatedAt: now)
    change(&order)
    return order
  }

  /// A machine for `order`, started; returns it with its first action.
  static func started(_ order: OrderRecord, at time: Date = now) -> (CheckoutMachine, CheckoutAction) {
    var machine = CheckoutMachine(order: order, policy: policy)
    let action = machine.start(now: time)
    return (machine, action)
  }

  static func priced(_ matches: Bool = true, cart: CartView? = cart, error: RemoteError? = nil)
    -> CheckoutEvent
  {
    .cartAnswered(CartCheckoutReply(cart: cart, matches: matches, error: error))
  }

  static func abandon(_ compensate: Bool, _ reason: String, _ detail: String) -> CheckoutAction {
    .record(.abandoned(compensate: compensate, reason: reason, detail: detail))
  }

  static let charge = CheckoutAction.charge(
    ChargeRequest(
      idempotencyKey: "grocer-order-ord_1", amount: cart.totals.total, method: .card, token: "tok",
      reference: "ord_1"))

  // MARK: - received: the cart at the customer's version

  @Test func aNewOrderAsksTheCartForItsPriceAtTheSeenVersion() {
    let (_, action) = Self.started(Self.order(.received))
    #expect(
      action
        == .askCart(
          CartCheckoutRequest(kind: .price, userId: "u1", hub: "h1", cartVersion: 3, correlationId: "req-1")))
  }

  @Test(arguments: [
    (priced(cart: nil), abandon(false, "cartUnavailable", "CartService sent no cart")),
    (CheckoutEvent.cartUnanswered, abandon(false, "cartUnavailable", "CartService did not answer")),
    (
      priced(error: RemoteError(code: "storage", detail: "disk")),
      abandon(false, "cartUnavailable", "CartService: storage: disk")
    ),
  ])
  func aCartThatCannotPriceGivesUpWithoutReleasingAnything(event: CheckoutEvent, expected: CheckoutAction) {
    var (machine, _) = Self.started(Self.order(.received))
    #expect(machine.handle(event, now: Self.now) == expected)
  }

  @Test func aChangedEmptyOrBlockedCartOrAnUnknownHubIsAnsweredWithoutAnOrder() {
    var empty = Self.cart
    empty.lines = []
    var blocked = Self.cart
    blocked.blocker = .hubClosed(opensAt: Self.now)
    let cases: [(CheckoutEvent, CheckoutRecord)] = [
      (
        Self.priced(false),
        .rejected(status: .cartChanged, answer: .cartChanged(orderId: "ord_1", cart: Self.cart))
      ),
      (
        Self.priced(cart: empty), .rejected(status: .blocked, answer: .blocked(orderId: "ord_1", cart: empty))
      ),
      (
        Self.priced(cart: blocked),
        .rejected(status: .blocked, answer: .blocked(orderId: "ord_1", cart: blocked))
      ),
      (
        Self.priced(cart: nil, error: RemoteError(code: "unknownHub", detail: "no")),
        .rejected(status: .rejected, answer: .unknownHub(orderId: "ord_1", hub: "h1"))
      ),
    ]
    for (event, record) in cases {
      var (machine, _) = Self.started(Self.order(.received))
      #expect(machine.handle(event, now: Self.now) == .record(record))
      #expect(machine.handle(.recorded(Self.reply), now: Self.now) == .finish(.answered(Self.reply)))
    }
  }

  @Test func aPricedCartIsRecordedThenReserved() {
    var (machine, _) = Self.started(Self.order(.received))
    #expect(machine.handle(Self.priced(), now: Self.now) == .record(.priced(Self.cart)))
    let next = machine.handle(.recorded(nil), now: Self.now)
    #expect(
      next
        == .reserve(
          ReservationRequest(
            orderId: "ord_1", hub: "h1", lines: [ReservationLine(sku: "p1", quantity: 2)],
            deliverTo: GeoPoint(lat: 52.5, lng: 13.4), correlationId: "req-1")))
    #expect(machine.order.step == .priced)
  }

  // MARK: - priced: the reservation

  @Test func aReservationNeverSentReleasesOnlyWhenAnEarlierDriveMayHaveAsked() {
    var (fresh, _) = Self.started(Self.order(.received))
    _ = fresh.handle(Self.priced(), now: Self.now)
    _ = fresh.handle(.recorded(nil), now: Self.now)
    #expect(
      fresh.handle(.reservationNotSent, now: Self.now)
        == Self.abandon(false, "stockUnavailable", "StockService is unreachable"))

    var (recovered, action) = Self.started(Self.order(.priced))
    guard case .reserve = action else {
      Issue.record("expected a reservation, got \(action)")
      return
    }
    #expect(
      recovered.handle(.reservationNotSent, now: Self.now)
        == Self.abandon(true, "stockUnavailable", "StockService is unreachable"))
  }

  @Test func aReservationWithoutAnswerIsReleased() {
    var (machine, _) = Self.started(Self.order(.priced))
    #expect(
      machine.handle(.reservationUnanswered, now: Self.now)
        == Self.abandon(true, "reservationUnknown", "StockService did not answer the reservation"))
    let end = machine.handle(.recorded(nil), now: Self.now)
    #expect(
      end
        == .finish(
          .unavailable(
            .unavailable(
              "StockService did not answer the reservation; nothing was charged, send the same request again")
          )))
  }

  @Test func heldGoodsAreRecordedWithTheStartOfTheChargeThenCharged() {
    var (machine, _) = Self.started(Self.order(.priced))
    let expires = Self.now + 900
    #expect(
      machine.handle(.reservationAnswered(.reserved(orderId: "ord_1", expiresAt: expires)), now: Self.now)
        == .record(.reserved(expiresAt: expires, chargingSince: Self.now)))
    #expect(machine.handle(.recorded(nil), now: Self.now) == Self.charge)
    #expect(machine.order.step == .charging)
  }

  @Test func aShortfallAdjustsTheCartAndAnswersItChanged() {
    var (machine, _) = Self.started(Self.order(.priced))
    let shortfall = ReservationReply(
      orderId: "ord_1", status: .shortfall, shortfall: [.init(sku: "p1", requested: 2, available: 1)])
    #expect(
      machine.handle(.reservationAnswered(shortfall), now: Self.now)
        == .askCart(
          CartCheckoutRequest(
            kind: .applyCounts, userId: "u1", hub: "h1", cartVersion: 3,
            counts: [.init(sku: "p1", available: 1)],
            correlationId: "req-1")))
    var adjusted = Self.cart
    adjusted.version = 4
    #expect(
      machine.handle(Self.priced(false, cart: adjusted), now: Self.now)
        == .record(.rejected(status: .cartChanged, answer: .cartChanged(orderId: "ord_1", cart: adjusted))))
  }

  @Test func aRefusalOfTheRequestItselfEndsTheAttemptAndAnyOtherIsWorthAnotherTry() {
    var (final, _) = Self.started(Self.order(.priced))
    let unknown = ReservationReply(
      orderId: "ord_1", status: .rejected, error: RemoteError(code: "unknownProduct", detail: "p1"))
    #expect(
      final.handle(.reservationAnswered(unknown), now: Self.now)
        == .record(
          .rejected(
            status: .rejected,
            answer: .refused(
              orderId: "ord_1", code: "unknownProduct", detail: "the hub cannot take this order: p1"))))

    // A point outside the hub's delivery area is final too: asking again gives the same answer.
    var (outside, _) = Self.started(Self.order(.priced))
    let far = ReservationReply(
      orderId: "ord_1", status: .rejected, error: RemoteError(code: "outsideDeliveryArea", detail: "h1"))
    #expect(
      outside.handle(.reservationAnswered(far), now: Self.now)
        == .record(
          .rejected(
            status: .rejected,
            answer: .refused(
              orderId: "ord_1", code: "outsideDeliveryArea", detail: "the hub cannot take this order: h1"))))

    var (retry, _) = Self.started(Self.order(.priced))
    let ended = ReservationReply(
      orderId: "ord_1", status: .rejected, error: RemoteError(code: "reservationEnded", detail: "gone"))
    #expect(
      retry.handle(.reservationAnswered(ended), now: Self.now)
        == Self.abandon(true, "reservationFailed", "StockService: gone"))
  }

  // MARK: - reserved and charging: the charge

  @Test func goodsNoLongerHeldAreNeverCharged() {
    let lapsing = Self.order(.reserved) { $0.reservationExpiresAt = Self.now + 39 }
    #expect(
      Self.started(lapsing).1 == Self.abandon(true, "reservationLapsed", "the stock was no longer held"))
    let held = Self.order(.reserved) { $0.reservationExpiresAt = Self.now + 41 }
    var (machine, action) = Self.started(held)
    #expect(action == .record(.charging(since: Self.now)))
    #expect(machine.handle(.recorded(nil), now: Self.now) == Self.charge)
  }

  @Test func eachVerdictOfTheChargeIsRecorded() {
    let action = PaymentAction(url: "https://bank/3ds")
    let cases: [(PaymentState, CheckoutRecord)] = [
      (.approved(paymentId: "pay1"), .confirmed(paymentId: "pay1")),
      (
        .declined(paymentId: "pay1", message: "no"),
        .declined(paymentId: "pay1", reason: "paymentDeclined", message: "no")
      ),
      (
        .requiresAction(paymentId: "pay1", action: action),
        .needsAction(
          paymentId: "pay1", action: action, deadline: Self.now + 600,
          nextLookAt: Self.now + CheckoutPolicy.actionPoll)
      ),
      (.processing(paymentId: "pay1"), .postponed),
    ]
    for (state, record) in cases {
      var (machine, _) = Self.started(Self.order(.reserved))
      _ = machine.handle(.recorded(nil), now: Self.now)
      #expect(machine.handle(.paymentAnswered(state), now: Self.now) == .record(record))
    }
  }

  @Test func aChargeWithoutAnswerIsPostponedNeverFailed() {
    var (machine, _) = Self.started(Self.order(.reserved))
    _ = machine.handle(.recorded(nil), now: Self.now)
    #expect(machine.handle(.paymentUnanswered, now: Self.now) == .record(.postponed))
    #expect(machine.handle(.recorded(nil), now: Self.now) == .finish(.pending))
  }

  @Test func theThreeDSecureDeadlineNeverOutlivesTheReservation() {
    let action = PaymentAction(url: "https://bank/3ds")
    var (machine, _) = Self.started(Self.order(.reserved) { $0.reservationExpiresAt = Self.now + 300 })
    _ = machine.handle(.recorded(nil), now: Self.now)
    let deadline = Self.now + 300 - Self.policy.reservationMargin
    #expect(
      machine.handle(.paymentAnswered(.requiresAction(paymentId: "pay1", action: action)), now: Self.now)
        == .record(
          .needsAction(
            paymentId: "pay1", action: action, deadline: deadline,
            nextLookAt: Self.now + CheckoutPolicy.actionPoll)))
  }

  @Test func afterACrashTheChargeIsLookedUpBeforeItIsSentAgain() {
    var (machine, action) = Self.started(Self.order(.charging) { $0.chargingSince = Self.now })
    #expect(action == .lookUpCharge(key: "grocer-order-ord_1"))
    #expect(machine.handle(.paymentAnswered(nil), now: Self.now) == Self.charge)

    var (found, _) = Self.started(Self.order(.charging) { $0.chargingSince = Self.now })
    #expect(
      found.handle(.paymentAnswered(.approved(paymentId: "pay1")), now: Self.now)
        == .record(.confirmed(paymentId: "pay1")))
  }

  /// When do we cancel a charge? When it stays without verdict past its give-up time.
  @Test func aChargeWithoutVerdictPastItsGiveUpTimeIsCancelledAtTheProvider() {
    let charging = Self.order(.charging) { $0.chargingSince = Self.now }
    var (early, _) = Self.started(charging)
    #expect(
      early.handle(.paymentAnswered(.processing(paymentId: "pay1")), now: Self.now + 899)
        == .record(.postponed))

    var (late, _) = Self.started(charging, at: Self.now + 900)
    #expect(
      late.handle(.paymentAnswered(.processing(paymentId: "pay1")), now: Self.now + 900)
        == .cancelCharge(key: "grocer-order-ord_1"))
    #expect(
      late.handle(.paymentAnswered(.declined(paymentId: "pay1", message: "cancelled")), now: Self.now + 900)
        == .record(.declined(paymentId: "pay1", reason: "paymentTimedOut", message: "cancelled")))

    var (unanswered, _) = Self.started(charging, at: Self.now + 900)
    _ = unanswered.handle(.paymentAnswered(.processing(paymentId: "pay1")), now: Self.now + 900)
    #expect(unanswered.handle(.paymentUnanswered, now: Self.now + 900) == .record(.postponed))
  }

  // MARK: - needsAction: the bank's verdict

  @Test func aThreeDSecureCheckIsLookedUpUntilItsDeadlineThenCancelled() {
    let waiting = Self.order(.needsAction) {
      $0.actionDeadline = Self.now + 60
      $0.paymentId = "pay1"
    }
    var (before, lookup) = Self.started(waiting)
    #expect(lookup == .lookUpCharge(key: "grocer-order-ord_1"))
    #expect(
      before.handle(.paymentAnswered(.declined(paymentId: "pay1", message: "no")), now: Self.now)
        == .record(.declined(paymentId: "pay1", reason: "paymentDeclined", message: "no")))
    guard case .fail = before.handle(.paymentAnswered(nil), now: Self.now) else {
      Issue.record("an event after the end must not be taken")
      return
    }
    var (unknown, _) = Self.started(waiting)
    guard case .fail = unknown.handle(.paymentAnswered(nil), now: Self.now) else {
      Issue.record("a payment the provider does not know before the deadline is not final")
      return
    }

    var (after, cancel) = Self.started(waiting, at: Self.now + 60)
    #expect(cancel == .cancelCharge(key: "grocer-order-ord_1"))
    #expect(
      after.handle(.paymentAnswered(nil), now: Self.now + 60)
        == .record(
          .declined(paymentId: "pay1", reason: "actionExpired", message: "the payment could not be found")))
  }

  // MARK: - At rest

  @Test func aFinishedOrderAnswersWhatIsStoredForItsKey() {
    for step in [SagaStep.confirmed, .declined, .rejected] {
      var (machine, action) = Self.started(Self.order(step))
      #expect(action == .readStoredAnswer)
      #expect(machine.handle(.storedAnswer(Self.reply), now: Self.now) == .finish(.answered(Self.reply)))
    }
    var (missing, _) = Self.started(Self.order(.confirmed))
    #expect(missing.handle(.storedAnswer(nil), now: Self.now) == .finish(.pending))
    #expect(
      Self.started(Self.order(.abandoned)).1
        == .finish(.unavailable(.unavailable("the checkout was given up; send the request again"))))
  }

  @Test func anOrderWithoutWhatItsStepNeedsIsPostponed() {
    guard case .fail = Self.started(Self.order(.priced) { $0.cart = nil }).1 else {
      Issue.record("a priced order without a cart cannot be reserved")
      return
    }
    var (machine, _) = Self.started(Self.order(.reserved) { $0.paymentToken = nil })
    guard case .fail = machine.handle(.recorded(nil), now: Self.now) else {
      Issue.record("an order without a token cannot be charged")
      return
    }
  }

  // MARK: - The moves and times the store applies

  @Test func eachRecordLeavesOnlyTheStepsItFollows() {
    #expect(CheckoutRecord.confirmed(paymentId: "p").move?.from == [.charging, .needsAction])
    #expect(
      CheckoutRecord.declined(paymentId: "p", reason: "r", message: "m").move?.from
        == [.priced, .reserved, .charging, .needsAction])
    #expect(CheckoutRecord.priced(Self.cart).move == SagaMove(from: [.received], to: .priced))
    #expect(
      CheckoutRecord.abandoned(compensate: true, reason: "r", detail: "d").move
        == SagaMove(from: [.received, .priced, .reserved], to: .abandoned, status: .rejected))
    #expect(CheckoutRecord.abandoned(compensate: false, reason: "r", detail: "d").move == nil)
    #expect(CheckoutRecord.postponed.move == nil)
  }

  @Test func aPostponedOrderWaitsLongerEachTryUpToAMinute() {
    #expect(CheckoutPolicy.retryDelay(afterTries: 1) == 1)
    #expect(CheckoutPolicy.retryDelay(afterTries: 2) == 2)
    #expect(CheckoutPolicy.retryDelay(afterTries: 6) == 32)
    #expect(CheckoutPolicy.retryDelay(afterTries: 7) == 60)
    #expect(CheckoutPolicy.retryDelay(afterTries: 50) == 60)
  }
}
