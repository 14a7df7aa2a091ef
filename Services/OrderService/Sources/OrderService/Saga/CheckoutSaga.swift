import Foundation
import GrocerContracts
import GrocerCore
import GrocerRuntime
import Synchronization

/// Where a drive of the saga left an order.
public enum SagaOutcome: Sendable, Hashable {
  /// At rest with an answer for its key (confirmed, declined, needs action, cart changed, …).
  case answered(OrderReply)
  /// Still running (a payment without verdict, storage trouble): recovery carries it on.
  case pending(orderId: String)
  /// Given up before any charge; the key is free again.
  case unavailable(OrderError)
}

/// Points where a test (or an operator's fault drill) can kill the process mid-saga.
public enum SagaFault: String, Sendable {
  /// After the provider approved the charge, before the confirmation is written.
  case afterCharge
  /// After the reservation, before the charge step is recorded.
  case afterReservation
}

/// The checkout saga: price → reserve → charge → confirm or decline, every step's result
/// written (`OrderStore`) before the next starts, so a drive can stop anywhere — a crash, a
/// time-out — and the next drive (the recovery loop's, after a restart) carries on from the last
/// recovery point:
///
/// - `received`: price the cart (read-only, safe to ask again).
/// - `priced`: reserve (keyed by order id at StockService, safe to ask again).
/// - `reserved`: record `charging`, then charge.
/// - `charging`: the provider may hold a charge: look it up by the order's payment key first,
///   charge (same key) only if it never got one. No verdict for too long → cancel it there.
/// - `needsAction`: look the verdict up (in case the callback was lost); past the deadline,
///   cancel at the provider (which answers the verdict instead if there already is one).
///
/// One drive per order at a time in this process (`drive` joins a running one).
public final class CheckoutSaga: Sendable {
  let store: OrderStore
  let clients: any CheckoutClients
  let payments: any PaymentProvider
  let clock: any WallClock
  let logger: Logger
  let paymentTimeout: Duration
  /// How long a 3-D Secure check may take before the payment is cancelled.
  let actionTimeout: TimeInterval
  /// How long a charge may stay without verdict before it is cancelled at the provider.
  let paymentGiveUp: TimeInterval
  let fault: SagaFault?
  private let running = Mutex<[String: Task<SagaOutcome, Never>]>([:])
  private let outcomes: [String: Counter]
  /// How long each step took, by the step the order was at when it began (reading it included;
  /// from `priced` the reservation and the charge run as one step).
  private let stepDurations: [SagaStep: Histogram]

  init(
    store: OrderStore, clients: any CheckoutClients, payments: any PaymentProvider, clock: any WallClock,
    logger: Logger, paymentTimeout: Duration, actionTimeout: TimeInterval, paymentGiveUp: TimeInterval,
    fault: SagaFault? = nil, metrics: MetricsRegistry = MetricsRegistry()
  ) {
    outcomes = Dictionary(
      uniqueKeysWithValues: ["confirmed", "declined", "needsAction", "rejected", "abandoned", "postponed"].map
      {
        (
          $0,
          metrics.counter(
            "checkout_outcomes_total", help: "Checkout saga results by kind.", labels: [("outcome", $0)])
        )
      })
    stepDurations = Dictionary(
      uniqueKeysWithValues: SagaStep.allCases.map { step in
        (
          step,
          metrics.histogram(
            "checkout_step_seconds", help: "Checkout saga steps by the step they started at.",
            labels: [("step", step.rawValue)])
        )
      })
    self.store = store
    self.clients = clients
    self.payments = payments
    self.clock = clock
    self.logger = logger
    self.paymentTimeout = paymentTimeout
    self.actionTimeout = actionTimeout
    self.paymentGiveUp = paymentGiveUp
    self.fault = fault
  }

  /// Drives `orderId` as far as it goes now; joins the drive already running, if any.
  public func drive(_ orderId: String) async -> SagaOutcome {
    await withCheckedContinuation { continuation in
      drive(orderId, known: nil) { continuation.resume(returning: $0) }
    }
  }

  /// `drive` for the request that began `order` and must not wait past its deadline: `done`
  /// gets the outcome, called by the drive's own task (no task in between). `order` is exactly
  /// as stored (as `OrderStore.begin` just wrote it), so the first step need not read it back.
  public func drive(_ order: OrderRecord, then done: @escaping @Sendable (SagaOutcome) -> Void) {
    drive(order.orderId, known: order, then: done)
  }

  /// Starts a drive of `orderId` from `known` (or from storage) unless one runs already, which
  /// is joined instead.
  private func drive(
    _ orderId: String, known: OrderRecord?, then done: @escaping @Sendable (SagaOutcome) -> Void
  ) {
    let joined = running.withLock { running -> Task<SagaOutcome, Never>? in
      if let task = running[orderId] { return task }
      running[orderId] = Task {
        let outcome = await self.advance(orderId, known: known)
        _ = self.running.withLock { $0.removeValue(forKey: orderId) }
        done(outcome)
        return outcome
      }
      return nil
    }
    if let joined { Task { done(await joined.value) } }
  }

  /// How many drives are running (tests, shutdown).
  public var drivesInFlight: Int { running.withLock { $0.count } }

  /// Carries on every order the recovery loop finds due.
  public func recover(limit: Int = 100) async throws {
    let store = self.store
    let due = try await runBlocking { try store.due(limit: limit) }
    await withTaskGroup(of: Void.self) { group in
      for orderId in due { group.addTask { _ = await self.drive(orderId) } }
    }
  }

  // MARK: - The loop

  private enum Next {
    /// The next step, with the order as the step just recorded it (saves reading it again).
    case proceed(OrderRecord)
    case stop(SagaOutcome)
  }

  private func advance(_ orderId: String, known given: OrderRecord?) async -> SagaOutcome {
    var inHand = given
    while true {
      let next: Next
      do {
        let started = ContinuousClock.now
        let known: OrderRecord?
        let handedOn = inHand != nil
        if let inHand {
          known = inHand
        } else {
          known = try await read({ try $0.order(orderId) })
        }
        inHand = nil
        guard let order = known else { return .unavailable(.orderNotFound(orderId)) }
        next = try await step(order, handedOn: handedOn)
        stepDurations[order.step]?.observe(Self.seconds(ContinuousClock.now - started))
      } catch {
        logger.warning(
          "checkout step failed; recovery carries it on", ["order.id": orderId, "error": "\(error)"])
        try? await write { try $0.postpone(orderId) }
        count("postponed")
        return .pending(orderId: orderId)
      }
      switch next {
      case .proceed(let order): inHand = order
      case .stop(let outcome): return outcome
      }
    }
  }

  /// `handedOn`: the previous step of this drive just recorded `order` (not read from storage).
  private func step(_ order: OrderRecord, handedOn: Bool) async throws -> Next {
    switch order.step {
    case .received: return try await price(order)
    case .priced: return try await reserve(order, firstAsk: handedOn)
    case .reserved: return try await charge(order)
    case .charging: return try await resumeCharge(order)
    case .needsAction: return try await awaitVerdict(order)
    case .confirmed, .declined, .rejected:
      guard let reply = try await read({ try $0.reply(for: order.orderId) }) else {
        return .stop(.pending(orderId: order.orderId))
      }
      return .stop(.answered(reply))
    case .abandoned:
      return .stop(.unavailable(.unavailable("the checkout was given up; send the request again")))
    }
  }

  // MARK: - Step 2: the cart at the customer's version

  private func price(_ order: OrderRecord) async throws -> Next {
    let reply: CartCheckoutReply
    do {
      reply = try await clients.askCart(
        CartCheckoutRequest(
          kind: .price, userId: order.userId, hub: order.hub, cartVersion: order.cartVersion,
          correlationId: order.correlationID))
    } catch {
      return try await giveUp(
        order, compensate: false, reason: "cartUnavailable", "CartService did not answer")
    }
    if let error = reply.error {
      if error.code == "unknownHub" {
        let answer = OrderReply.problem(
          status: 404, orderId: order.orderId, code: "unknownHub", detail: "there is no hub \(order.hub)")
        return try await reject(order, .rejected, answer)
      }
      return try await giveUp(order, compensate: false, reason: "cartUnavailable", "CartService: \(error)")
    }
    guard let cart = reply.cart else {
      return try await giveUp(order, compensate: false, reason: "cartUnavailable", "CartService sent no cart")
    }
    if !reply.matches {
      let answer = OrderReply.cartChanged(orderId: order.orderId, cart: cart)
      return try await reject(order, .cartChanged, answer)
    }
    if cart.lines.isEmpty || cart.blocker != nil {
      let answer = OrderReply.blocked(orderId: order.orderId, cart: cart)
      return try await reject(order, .blocked, answer)
    }
    try await write { try $0.recordPriced(order.orderId, cart: cart) }
    // Go on with the order in hand rather than reading it (and decoding its cart) again.
    var priced = order
    priced.step = .priced
    priced.cart = cart
    return .proceed(priced)
  }

  // MARK: - Step 3: the reservation

  /// `firstAsk`: pricing has just been recorded in this drive, so StockService was never asked
  /// for this order. Otherwise an earlier drive (before a crash, or one whose record of the
  /// answer failed) may have made the reservation.
  private func reserve(_ order: OrderRecord, firstAsk: Bool) async throws -> Next {
    guard let cart = order.cart else {
      throw OrderStoreError("order \(order.orderId) was priced without a cart")
    }
    let reply: ReservationReply
    do {
      reply = try await clients.reserve(
        ReservationRequest(
          orderId: order.orderId, hub: order.hub,
          lines: cart.lines.map { ReservationLine(sku: $0.sku, quantity: $0.quantity) },
          correlationId: order.correlationID))
    } catch RemoteCallError.notSent {
      // Not sent now; but unless this is the first ask, an earlier one may hold the goods:
      // release them (keyed by order id, releasing nothing is harmless).
      return try await giveUp(
        order, compensate: !firstAsk, reason: "stockUnavailable", "StockService is unreachable")
    } catch {
      // It may have been made: release it (keyed by order id, so releasing nothing is harmless).
      return try await giveUp(
        order, compensate: true, reason: "reservationUnknown", "StockService did not answer the reservation")
    }
    switch reply.status {
    case .reserved:
      // Held: the reservation and the start of the charge are one recovery point (`charging`
      // looks the payment up before charging again, so nothing is lost by joining them).
      let since = clock.now()
      try await write {
        try $0.recordReserved(order.orderId, expiresAt: reply.expiresAt, chargingSince: since)
      }
      if fault == .afterReservation { Self.crash() }
      var charging = order
      charging.step = .charging
      charging.reservationExpiresAt = reply.expiresAt
      charging.chargingSince = since
      return try await sendCharge(charging)
    case .shortfall:
      // Nothing is held. The cart takes the counts the hub has, and the customer sees them.
      let counts = (reply.shortfall ?? []).map {
        CartCheckoutRequest.Count(sku: $0.sku, available: $0.available)
      }
      let adjusted: CartCheckoutReply
      do {
        adjusted = try await clients.askCart(
          CartCheckoutRequest(
            kind: .applyCounts, userId: order.userId, hub: order.hub, cartVersion: order.cartVersion,
            counts: counts, correlationId: order.correlationID))
      } catch {
        return try await giveUp(
          order, compensate: false, reason: "cartUnavailable", "CartService did not answer")
      }
      guard let newCart = adjusted.cart else {
        return try await giveUp(
          order, compensate: false, reason: "cartUnavailable", "CartService sent no cart")
      }
      let answer = OrderReply.cartChanged(orderId: order.orderId, cart: newCart)
      return try await reject(order, .cartChanged, answer)
    case .rejected:
      let error = reply.error ?? RemoteError(code: "reservationRejected", detail: "StockService refused")
      guard Self.finalReservationRefusals.contains(error.code) else {
        // StockService could not store it, or the order's reservation already ended: nothing
        // is charged; release whatever may be held and let the customer send it again.
        return try await giveUp(
          order, compensate: true, reason: "reservationFailed", "StockService: \(error.detail)")
      }
      let answer = OrderReply.problem(
        status: 422, orderId: order.orderId, code: error.code,
        detail: "the hub cannot take this order: \(error.detail)")
      return try await reject(order, .rejected, answer)
    }
  }

  /// StockService refusals that describe the request itself: answering them again gives the
  /// same refusal, so they end the attempt. Any other (it could not store it, the reservation
  /// already ended) is worth another try with the same key.
  static let finalReservationRefusals: Set<String> = [
    "unknownHub", "unknownProduct", "invalidSKU", "invalidHubID", "invalidQuantity", "duplicateLine",
    "invalidLineCount", "invalidOrderID",
  ]

  /// How long before its reservation ends an order is no longer charged (the charge and its
  /// confirmation must reach StockService while the goods are still held).
  var reservationMargin: TimeInterval {
    Double(paymentTimeout.components.seconds) + 30
  }

  // MARK: - Step 4: the charge

  private func charge(_ order: OrderRecord) async throws -> Next {
    // A process that died after the reservation may come back after the hold ended: never
    // charge for goods that are no longer held.
    if let expires = order.reservationExpiresAt, expires < clock.now() + reservationMargin {
      return try await giveUp(
        order, compensate: true, reason: "reservationLapsed", "the stock was no longer held")
    }
    try await write { try $0.recordCharging(order.orderId) }
    return try await sendCharge(order)
  }

  /// When a payment without verdict is given up: the configured time after the charge, but
  /// never later than the reservation allows.
  private func giveUpTime(_ order: OrderRecord, after start: Date?, _ allowed: TimeInterval) -> Date {
    let configured = (start ?? clock.now()) + allowed
    guard let expires = order.reservationExpiresAt else { return configured }
    return min(configured, expires - reservationMargin)
  }

  private func sendCharge(_ order: OrderRecord) async throws -> Next {
    guard let total = order.total, let token = order.paymentToken else {
      throw OrderStoreError("order \(order.orderId) has no total or token to charge")
    }
    let request = ChargeRequest(
      idempotencyKey: order.paymentKey, amount: total, method: order.method, token: token,
      reference: order.orderId)
    let payments = self.payments
    let state: PaymentState
    do {
      state = try await payments.within(paymentTimeout) { try await payments.charge(request) }
    } catch {
      logger.info(
        "charge has no answer yet; it is looked up later", ["order.id": order.orderId, "error": "\(error)"])
      try await write { try $0.postpone(order.orderId) }
      return .stop(.pending(orderId: order.orderId))
    }
    if fault == .afterCharge, case .approved = state { Self.crash() }
    return try await apply(state, to: order)
  }

  /// After a crash or a time-out: what the provider holds under the order's key decides; only
  /// if it holds nothing is the charge sent (again, with the same key).
  private func resumeCharge(_ order: OrderRecord) async throws -> Next {
    let payments = self.payments
    let key = order.paymentKey
    let found: PaymentState?
    do {
      found = try await payments.within(paymentTimeout) { try await payments.lookup(idempotencyKey: key) }
    } catch {
      try await write { try $0.postpone(order.orderId) }
      return .stop(.pending(orderId: order.orderId))
    }
    guard let found else { return try await sendCharge(order) }
    if case .processing = found, clock.now() >= giveUpTime(order, after: order.chargingSince, paymentGiveUp) {
      let cancelled = try? await payments.within(paymentTimeout) {
        try await payments.cancel(idempotencyKey: key)
      }
      if let state = cancelled ?? nil { return try await apply(state, to: order, reason: "paymentTimedOut") }
    }
    return try await apply(found, to: order)
  }

  private func awaitVerdict(_ order: OrderRecord) async throws -> Next {
    let payments = self.payments
    let key = order.paymentKey
    let expired = order.actionDeadline.map { clock.now() >= $0 } ?? false
    let state: PaymentState?
    do {
      state = try await payments.within(paymentTimeout) {
        expired
          ? try await payments.cancel(idempotencyKey: key) : try await payments.lookup(idempotencyKey: key)
      }
    } catch {
      try await write { try $0.postpone(order.orderId) }
      return .stop(.pending(orderId: order.orderId))
    }
    guard let state else {
      // The provider has no such payment: nothing was taken. Past the deadline that is final.
      guard expired else {
        throw OrderStoreError("the provider does not know the payment of \(order.orderId)")
      }
      return try await apply(
        .declined(paymentId: order.paymentId ?? "", message: "the payment could not be found"), to: order,
        reason: "actionExpired")
    }
    return try await apply(state, to: order, reason: expired ? "actionExpired" : "paymentDeclined")
  }

  private func apply(_ state: PaymentState, to order: OrderRecord, reason: String = "paymentDeclined")
    async throws -> Next
  {
    switch state {
    case .approved(let paymentId):
      let reply = try await write { try $0.confirm(order.orderId, paymentId: paymentId, known: order) }
      count("confirmed")
      logger.info("order confirmed", ["order.id": order.orderId, "payment.id": paymentId])
      return .stop(.answered(reply))
    case .declined(let paymentId, let message):
      let reply = try await write {
        try $0.decline(order.orderId, paymentId: paymentId, reason: reason, message: message)
      }
      count("declined")
      logger.info("order declined", ["order.id": order.orderId, "reason": reason])
      return .stop(.answered(reply))
    case .requiresAction(let paymentId, let action):
      let deadline = order.actionDeadline ?? giveUpTime(order, after: nil, actionTimeout)
      let reply = try await write {
        try $0.recordNeedsAction(order.orderId, paymentId: paymentId, action: action, deadline: deadline)
      }
      count("needsAction")
      return .stop(.answered(reply))
    case .processing:
      try await write { try $0.postpone(order.orderId) }
      return .stop(.pending(orderId: order.orderId))
    }
  }

  /// Ends the attempt without an order (nothing reserved, nothing charged): `answer` is the key's.
  private func reject(_ order: OrderRecord, _ status: OrderStatus, _ answer: OrderReply) async throws -> Next
  {
    try await write { try $0.reject(order.orderId, status: status, reply: answer) }
    count("rejected")
    return .stop(.answered(answer))
  }

  private func giveUp(_ order: OrderRecord, compensate: Bool, reason: String, _ detail: String) async throws
    -> Next
  {
    logger.warning(
      "checkout given up before any charge", ["order.id": order.orderId, "reason": reason, "detail": detail])
    try await write { try $0.abandon(order.orderId, compensate: compensate, reason: reason) }
    count("abandoned")
    return .stop(.unavailable(.unavailable("\(detail); nothing was charged, send the same request again")))
  }

  private func count(_ outcome: String) { outcomes[outcome]?.increment() }

  private static func seconds(_ duration: Duration) -> Double {
    Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
  }

  // MARK: - Storage

  private func write<T: Sendable>(_ body: @escaping @Sendable (OrderStore) throws -> T) async throws -> T {
    let store = self.store
    return try await store.database.onWriterQueue { try body(store) }
  }

  private func read<T: Sendable>(_ body: @escaping @Sendable (OrderStore) throws -> T) async throws -> T {
    let store = self.store
    return try await runBlocking { try body(store) }
  }

  /// Dies at once, as `kill -9` would: no clean-up, no flush (fault drills only).
  private static func crash() -> Never {
    kill(getpid(), SIGKILL)
    fatalError("SIGKILL did not stop the process")
  }
}
