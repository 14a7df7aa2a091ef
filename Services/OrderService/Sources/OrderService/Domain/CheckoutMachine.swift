import Foundation
import GrocerContracts
import GrocerCore

/// The checkout as a state machine: every rule of the money path in one value, without I/O.
///
/// A drive holds one machine for one order. `start` and `handle` say what to do next (ask the
/// cart, reserve, charge, look the charge up, cancel it, record a step, finish); the I/O shell
/// (`CheckoutSaga`) does it and hands back what came of it. Every step's result is recorded
/// before the step after it starts, so a drive can stop anywhere (a crash, a time-out) and the
/// next one, built from the stored order, carries on from the last recovery point:
///
/// - `received`: price the cart (read-only, safe to ask again).
/// - `priced`: reserve (keyed by order id at StockService, safe to ask again).
/// - `reserved`: record `charging`, then charge.
/// - `charging`: the provider may hold a charge: look it up by the order's payment key first,
///   charge (same key) only if it never got one. No verdict for too long → cancel it there.
/// - `needsAction`: look the verdict up (in case the callback was lost); past the deadline,
///   cancel at the provider (which answers the verdict instead if there already is one).
///
/// When is a charge cancelled? Only at the provider, and only in two cells: a charge still
/// `processing` past its give-up time (`paymentGiveUp` after it started, never later than the
/// reservation allows), and a 3-D Secure check past its deadline. Before any charge, a failed
/// step gives the attempt up (`abandoned`, the key free again) and releases the reservation
/// whenever one may exist.
public struct CheckoutMachine: Sendable {
  /// The order as this drive knows it (as stored after the last recorded step).
  public private(set) var order: OrderRecord
  private let policy: CheckoutPolicy
  /// Pricing was recorded in this drive, so StockService was never asked for this order.
  private var pricedInThisDrive = false
  private var awaiting: Awaiting = .start

  /// What the machine waits to hear about.
  private enum Awaiting: Sendable {
    case start
    case price
    case reservation
    case counts
    case charge
    case lookup
    /// A cancel asked because `found` stayed `processing` past its give-up time.
    case giveUpCancel(found: PaymentState)
    case verdict(expired: Bool)
    case record(CheckoutRecord)
    case storedAnswer
    case finished
  }

  public init(order: OrderRecord, policy: CheckoutPolicy) {
    self.order = order
    self.policy = policy
  }

  /// The first action for the order as it stands.
  public mutating func start(now: Date) -> CheckoutAction {
    switch order.step {
    case .received:
      awaiting = .price
      return .askCart(cartRequest(.price))
    case .priced:
      return reserve()
    case .reserved:
      // A process that died after the reservation may come back after the hold ended: never
      // charge for goods that are no longer held.
      if let expires = order.reservationExpiresAt, expires < now + policy.reservationMargin {
        return giveUp(compensate: true, reason: "reservationLapsed", "the stock was no longer held")
      }
      return record(.charging(since: now))
    case .charging:
      awaiting = .lookup
      return .lookUpCharge(key: order.paymentKey)
    case .needsAction:
      let expired = order.actionDeadline.map { now >= $0 } ?? false
      awaiting = .verdict(expired: expired)
      return expired ? .cancelCharge(key: order.paymentKey) : .lookUpCharge(key: order.paymentKey)
    case .confirmed, .declined, .rejected:
      awaiting = .storedAnswer
      return .readStoredAnswer
    case .abandoned:
      return finish(.unavailable(.unavailable("the checkout was given up; send the request again")))
    }
  }

  /// The next action after `event`, the outcome of the last one.
  public mutating func handle(_ event: CheckoutEvent, now: Date) -> CheckoutAction {
    switch (awaiting, event) {
    case (.price, .cartUnanswered):
      return giveUp(compensate: false, reason: "cartUnavailable", "CartService did not answer")
    case (.price, .cartAnswered(let reply)):
      return priced(reply)

    case (.reservation, .reservationNotSent):
      // Not sent now; but unless pricing was just recorded, an earlier drive may hold the goods:
      // release them (keyed by order id, releasing nothing is harmless).
      return giveUp(
        compensate: !pricedInThisDrive, reason: "stockUnavailable", "StockService is unreachable")
    case (.reservation, .reservationUnanswered):
      // It may have been made: release it.
      return giveUp(
        compensate: true, reason: "reservationUnknown", "StockService did not answer the reservation")
    case (.reservation, .reservationAnswered(let reply)):
      return reserved(reply, now: now)

    case (.counts, .cartUnanswered):
      return giveUp(compensate: false, reason: "cartUnavailable", "CartService did not answer")
    case (.counts, .cartAnswered(let reply)):
      guard let cart = reply.cart else {
        return giveUp(compensate: false, reason: "cartUnavailable", "CartService sent no cart")
      }
      return reject(.cartChanged, .cartChanged(orderId: order.orderId, cart: cart))

    case (.charge, .paymentUnanswered), (.lookup, .paymentUnanswered), (.verdict, .paymentUnanswered):
      return record(.postponed)
    case (.charge, .paymentAnswered(let state?)):
      return apply(state, now: now)
    case (.lookup, .paymentAnswered(nil)):
      return sendCharge()
    case (.lookup, .paymentAnswered(let found?)):
      if case .processing = found,
        now >= giveUpTime(after: order.chargingSince, policy.paymentGiveUp, now: now)
      {
        awaiting = .giveUpCancel(found: found)
        return .cancelCharge(key: order.paymentKey)
      }
      return apply(found, now: now)
    case (.giveUpCancel(let found), .paymentAnswered(let cancelled)):
      guard let cancelled else { return apply(found, now: now) }
      return apply(cancelled, reason: "paymentTimedOut", now: now)
    case (.giveUpCancel(let found), .paymentUnanswered):
      return apply(found, now: now)
    case (.verdict(let expired), .paymentAnswered(nil)):
      // The provider has no such payment: nothing was taken. Past the deadline that is final.
      guard expired else { return fail("the provider does not know the payment of \(order.orderId)") }
      return apply(
        .declined(paymentId: order.paymentId ?? "", message: "the payment could not be found"),
        reason: "actionExpired", now: now)
    case (.verdict(let expired), .paymentAnswered(let state?)):
      return apply(state, reason: expired ? "actionExpired" : "paymentDeclined", now: now)

    case (.record(let done), .recorded(let reply)):
      return recorded(done, reply: reply, now: now)
    case (.storedAnswer, .storedAnswer(let reply)):
      guard let reply else { return finish(.pending) }
      return finish(.answered(reply))

    default:
      return fail("checkout of \(order.orderId) got \(event) while waiting for \(awaiting)")
    }
  }

  // MARK: - The cells

  private mutating func priced(_ reply: CartCheckoutReply) -> CheckoutAction {
    if let error = reply.error {
      if error.code == "unknownHub" {
        return reject(.rejected, .unknownHub(orderId: order.orderId, hub: order.hub))
      }
      return giveUp(compensate: false, reason: "cartUnavailable", "CartService: \(error)")
    }
    guard let cart = reply.cart else {
      return giveUp(compensate: false, reason: "cartUnavailable", "CartService sent no cart")
    }
    if !reply.matches { return reject(.cartChanged, .cartChanged(orderId: order.orderId, cart: cart)) }
    if cart.lines.isEmpty || cart.blocker != nil {
      return reject(.blocked, .blocked(orderId: order.orderId, cart: cart))
    }
    return record(.priced(cart))
  }

  private mutating func reserve() -> CheckoutAction {
    guard let cart = order.cart else { return fail("order \(order.orderId) was priced without a cart") }
    awaiting = .reservation
    return .reserve(
      ReservationRequest(
        orderId: order.orderId, hub: order.hub,
        lines: cart.lines.map { ReservationLine(sku: $0.sku, quantity: $0.quantity) },
        deliverTo: order.deliverTo, correlationId: order.correlationID))
  }

  private mutating func reserved(_ reply: ReservationReply, now: Date) -> CheckoutAction {
    switch reply.status {
    case .reserved:
      // The reservation and the start of the charge are one recovery point (`charging` looks
      // the payment up before charging again, so nothing is lost by joining them).
      return record(.reserved(expiresAt: reply.expiresAt, chargingSince: now))
    case .shortfall:
      // Nothing is held. The cart takes the counts the hub has, and the customer sees them.
      let counts = (reply.shortfall ?? []).map {
        CartCheckoutRequest.Count(sku: $0.sku, available: $0.available)
      }
      awaiting = .counts
      return .askCart(cartRequest(.applyCounts, counts: counts))
    case .rejected:
      let error = reply.error ?? RemoteError(code: "reservationRejected", detail: "StockService refused")
      guard CheckoutPolicy.finalReservationRefusals.contains(error.code) else {
        // StockService could not store it, or the order's reservation already ended: nothing
        // is charged; release whatever may be held and let the customer send it again.
        return giveUp(compensate: true, reason: "reservationFailed", "StockService: \(error.detail)")
      }
      return reject(
        .rejected,
        .refused(
          orderId: order.orderId, code: error.code, detail: "the hub cannot take this order: \(error.detail)")
      )
    }
  }

  private mutating func sendCharge() -> CheckoutAction {
    guard let total = order.total, let token = order.paymentToken else {
      return fail("order \(order.orderId) has no total or token to charge")
    }
    awaiting = .charge
    return .charge(
      ChargeRequest(
        idempotencyKey: order.paymentKey, amount: total, method: order.method, token: token,
        reference: order.orderId))
  }

  private mutating func apply(_ state: PaymentState, reason: String = "paymentDeclined", now: Date)
    -> CheckoutAction
  {
    switch state {
    case .approved(let paymentId):
      return record(.confirmed(paymentId: paymentId))
    case .declined(let paymentId, let message):
      return record(.declined(paymentId: paymentId, reason: reason, message: message))
    case .requiresAction(let paymentId, let action):
      let deadline = order.actionDeadline ?? giveUpTime(after: nil, policy.actionTimeout, now: now)
      return record(
        .needsAction(
          paymentId: paymentId, action: action, deadline: deadline,
          nextLookAt: min(deadline, now + CheckoutPolicy.actionPoll)))
    case .processing:
      return record(.postponed)
    }
  }

  /// When a payment without verdict is given up: `allowed` after `start` (or now), but never
  /// later than the reservation allows.
  private func giveUpTime(after start: Date?, _ allowed: TimeInterval, now: Date) -> Date {
    let configured = (start ?? now) + allowed
    guard let expires = order.reservationExpiresAt else { return configured }
    return min(configured, expires - policy.reservationMargin)
  }

  /// Ends the attempt without an order (nothing reserved, nothing charged): `answer` is the key's.
  private mutating func reject(_ status: OrderStatus, _ answer: CheckoutAnswer) -> CheckoutAction {
    record(.rejected(status: status, answer: answer))
  }

  /// Gives up before any charge (a dependency did not answer); with `compensate`, a reservation
  /// may exist and is released.
  private mutating func giveUp(compensate: Bool, reason: String, _ detail: String) -> CheckoutAction {
    record(.abandoned(compensate: compensate, reason: reason, detail: detail))
  }

  private mutating func record(_ change: CheckoutRecord) -> CheckoutAction {
    awaiting = .record(change)
    return .record(change)
  }

  /// `change` is stored: the order moves on, and the drive goes on or ends.
  private mutating func recorded(_ change: CheckoutRecord, reply: OrderReply?, now: Date) -> CheckoutAction {
    switch change {
    case .priced(let cart):
      order.step = .priced
      order.cart = cart
      pricedInThisDrive = true
      return reserve()
    case .reserved(let expiresAt, let since):
      order.step = .charging
      order.reservationExpiresAt = expiresAt
      order.chargingSince = since
      return sendCharge()
    case .charging(let since):
      order.step = .charging
      order.chargingSince = since
      return sendCharge()
    case .confirmed, .declined, .needsAction, .rejected:
      guard let reply else { return fail("order \(order.orderId) was recorded without an answer") }
      return finish(.answered(reply))
    case .abandoned(_, _, let detail):
      return finish(.unavailable(.unavailable("\(detail); nothing was charged, send the same request again")))
    case .postponed:
      return finish(.pending)
    }
  }

  private mutating func finish(_ end: CheckoutEnd) -> CheckoutAction {
    awaiting = .finished
    return .finish(end)
  }

  /// Something that cannot be (a step without what it needs, an event out of turn): this drive
  /// stops and recovery carries the order on later.
  private mutating func fail(_ reason: String) -> CheckoutAction {
    awaiting = .finished
    return .fail(reason)
  }

  private func cartRequest(_ kind: CartCheckoutRequest.Kind, counts: [CartCheckoutRequest.Count]? = nil)
    -> CartCheckoutRequest
  {
    CartCheckoutRequest(
      kind: kind, userId: order.userId, hub: order.hub, cartVersion: order.cartVersion, counts: counts,
      correlationId: order.correlationID)
  }
}

/// What the shell does next for a `CheckoutMachine`.
public enum CheckoutAction: Sendable, Hashable {
  /// Ask CartService (price, or apply the counts the hub has): `.cartAnswered` or `.cartUnanswered`.
  case askCart(CartCheckoutRequest)
  /// Ask StockService to hold the lines: `.reservationAnswered`, `.reservationNotSent` or
  /// `.reservationUnanswered`.
  case reserve(ReservationRequest)
  /// Charge the provider (idempotent on the key): `.paymentAnswered` or `.paymentUnanswered`.
  case charge(ChargeRequest)
  /// What the provider holds under the order's key.
  case lookUpCharge(key: String)
  /// Stop the payment at the provider (it answers the verdict if there is one).
  case cancelCharge(key: String)
  /// The stored answer of a finished order: `.storedAnswer`.
  case readStoredAnswer
  /// Write the step (with its answer and events, in one transaction): `.recorded`.
  case record(CheckoutRecord)
  /// The drive is over.
  case finish(CheckoutEnd)
  /// The drive cannot go on (see `CheckoutMachine.fail`): postpone the order.
  case fail(String)
}

/// What came of the last `CheckoutAction`.
public enum CheckoutEvent: Sendable, Hashable {
  case cartAnswered(CartCheckoutReply)
  case cartUnanswered
  case reservationAnswered(ReservationReply)
  /// Never sent (no broker connection): nothing can have happened.
  case reservationNotSent
  /// Sent without an answer in time: it may have been made.
  case reservationUnanswered
  /// The provider's state of the payment (nil: it holds nothing under the key).
  case paymentAnswered(PaymentState?)
  /// The provider did not answer in time: the outcome is unknown, never "failed".
  case paymentUnanswered
  /// The step is stored; `reply` is the key's answer when the step has one.
  case recorded(OrderReply?)
  case storedAnswer(OrderReply?)
}

/// One recovery point of the checkout, as the shell writes it.
public enum CheckoutRecord: Sendable, Hashable {
  /// The cart as priced at the customer's version.
  case priced(CartView)
  /// StockService holds the lines, and the charge starts (same write).
  case reserved(expiresAt: Date?, chargingSince: Date)
  /// From here on the provider may hold a charge under the order's payment key.
  case charging(since: Date)
  /// The bank wants 3-D Secure: 202 with the action is the key's answer until the verdict.
  case needsAction(paymentId: String, action: PaymentAction, deadline: Date, nextLookAt: Date)
  /// Paid: `order.confirmed`, 201.
  case confirmed(paymentId: String)
  /// Not paid: `order.declined` (the reservation is released), 402.
  case declined(paymentId: String, reason: String, message: String)
  /// Answered without becoming an order; nothing reserved or charged.
  case rejected(status: OrderStatus, answer: CheckoutAnswer)
  /// Given up before any charge; the key is free again. With `compensate`, `order.cancelled`
  /// releases a reservation that may exist.
  case abandoned(compensate: Bool, reason: String, detail: String)
  /// No verdict this round: try again after the back-off.
  case postponed

  /// The move in the saga this record makes: the steps it may leave (anything else means
  /// another drive got there first) and where it goes.
  public var move: SagaMove? {
    switch self {
    case .priced: SagaMove(from: [.received], to: .priced)
    case .reserved: SagaMove(from: [.priced], to: .charging)
    case .charging: SagaMove(from: [.reserved], to: .charging)
    case .needsAction: SagaMove(from: [.charging, .needsAction], to: .needsAction, status: .needsAction)
    case .confirmed: SagaMove(from: [.charging, .needsAction], to: .confirmed, status: .confirmed)
    case .declined:
      SagaMove(from: [.priced, .reserved, .charging, .needsAction], to: .declined, status: .declined)
    case .rejected(let status, _): SagaMove(from: [.received, .priced], to: .rejected, status: status)
    case .abandoned(let compensate, _, _):
      // Without compensation nothing happened outside: the attempt is forgotten (no move).
      compensate ? SagaMove(from: SagaStep.abandonable, to: .abandoned, status: .rejected) : nil
    case .postponed: nil
    }
  }
}

/// A move of the saga from one recovery point to the next.
public struct SagaMove: Sendable, Hashable {
  public var from: [SagaStep]
  public var to: SagaStep
  /// The status the customer sees from now on (unchanged when nil).
  public var status: OrderStatus?

  public init(from: [SagaStep], to: SagaStep, status: OrderStatus? = nil) {
    self.from = from
    self.to = to
    self.status = status
  }
}

/// How a drive ended.
public enum CheckoutEnd: Sendable, Hashable {
  /// At rest with an answer for its key (confirmed, declined, needs action, cart changed, …).
  case answered(OrderReply)
  /// Still running (a payment without verdict): recovery carries it on.
  case pending
  /// Given up before any charge; the key is free again.
  case unavailable(OrderError)
}

/// The answer to `POST /v1/orders` the checkout decided, before it is written as a reply.
public enum CheckoutAnswer: Sendable, Hashable {
  case confirmed(orderId: String, total: Money)
  case needsAction(orderId: String, paymentId: String, action: PaymentAction)
  case declined(orderId: String, message: String)
  /// The cart is not at the version the customer saw (or the hub had less): nothing reserved.
  case cartChanged(orderId: String, cart: CartView)
  /// Empty, or with a blocker (below the minimum, the hub closed).
  case blocked(orderId: String, cart: CartView)
  case unknownHub(orderId: String, hub: HubID)
  /// StockService refused the order itself (`code` is its reason).
  case refused(orderId: String, code: String, detail: String)
}

/// The checkout's times and lists: what the machine and the store's recovery queries use.
public struct CheckoutPolicy: Sendable {
  /// How long a call to the payment provider may take before its outcome counts as unknown.
  public var paymentTimeout: Duration
  /// How long a 3-D Secure check may take before the payment is cancelled.
  public var actionTimeout: TimeInterval
  /// How long a charge may stay without verdict before it is cancelled at the provider.
  public var paymentGiveUp: TimeInterval

  public init(paymentTimeout: Duration, actionTimeout: TimeInterval, paymentGiveUp: TimeInterval) {
    self.paymentTimeout = paymentTimeout
    self.actionTimeout = actionTimeout
    self.paymentGiveUp = paymentGiveUp
  }

  /// How long before its reservation ends an order is no longer charged (the charge and its
  /// confirmation must reach StockService while the goods are still held).
  public var reservationMargin: TimeInterval { Double(paymentTimeout.components.seconds) + 30 }

  /// StockService refusals that describe the request itself: asking again gives the same
  /// refusal, so they end the attempt. Any other is worth another try with the same key.
  public static let finalReservationRefusals: Set<String> = [
    "unknownHub", "unknownProduct", "invalidSKU", "invalidHubID", "invalidQuantity", "duplicateLine",
    "invalidLineCount", "invalidOrderID", "outsideDeliveryArea",
  ]

  /// How long a new (or just moved) order is left to the drive under way before recovery looks.
  public static let recoveryGrace: TimeInterval = 5

  /// How often an order waiting for 3-D Secure is looked up, in case its callback never comes.
  public static let actionPoll: TimeInterval = 30

  /// The wait before the `tries`-th retry of a postponed order: doubling from a second, capped
  /// at a minute.
  public static func retryDelay(afterTries tries: Int) -> TimeInterval {
    min(60, 0.5 * pow(2, Double(min(tries, 10))))
  }
}
