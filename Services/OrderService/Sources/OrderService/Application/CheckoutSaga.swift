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

/// The checkout saga's I/O shell: it runs a `CheckoutMachine` for an order, doing what the
/// machine asks (ask CartService and StockService over the broker, call the payment provider,
/// record each step in `OrderStore` with its answer and events) and handing back what came of
/// it. The rules are the machine's; this type only does I/O, logs and counts.
///
/// One drive per order at a time: in this process `drive` joins a running one, and across
/// replicas a drive first claims its order in the database (`OrderStore.claim`).
public final class CheckoutSaga: Sendable {
  let store: OrderStore
  let clients: any CheckoutClients
  let payments: any PaymentProvider
  let clock: any WallClock
  let logger: Logger
  let policy: CheckoutPolicy
  let fault: SagaFault?
  /// The payment calls' time limits.
  let deadlines: Deadlines
  private let running = Mutex<[String: Task<SagaOutcome, Never>]>([:])
  private let outcomes: [String: Counter]
  /// How long each step took, by the step the order was at when it began (reading it included;
  /// from `priced` the reservation and the charge run as one step).
  private let stepDurations: [SagaStep: Histogram]
  /// How long each kind of action took (the questions to other services, the provider's calls,
  /// the writes): where a slow step's time goes.
  private let actionDurations: [TimedCheckoutAction: Histogram]

  init(
    store: OrderStore, clients: any CheckoutClients, payments: any PaymentProvider, clock: any WallClock,
    logger: Logger, paymentTimeout: Duration,
    actionTimeout: TimeInterval, paymentGiveUp: TimeInterval, deadlines: Deadlines, fault: SagaFault? = nil,
    metrics: MetricsRegistry = MetricsRegistry()
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
    actionDurations = Dictionary(
      uniqueKeysWithValues: TimedCheckoutAction.allCases.map { kind in
        (
          kind,
          metrics.histogram(
            "checkout_action_seconds", help: "Checkout saga actions by kind.",
            labels: [("action", kind.rawValue)])
        )
      })
    self.store = store
    self.clients = clients
    self.payments = payments
    self.clock = clock
    self.logger = logger
    self.policy = CheckoutPolicy(
      paymentTimeout: paymentTimeout, actionTimeout: actionTimeout, paymentGiveUp: paymentGiveUp)
    self.fault = fault
    self.deadlines = deadlines
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

  /// Starts a drive of `orderId` from `known` (claimed as it was begun) or from storage (claimed
  /// first) unless one runs already, which is joined instead.
  private func drive(
    _ orderId: String, known: OrderRecord?, then done: @escaping @Sendable (SagaOutcome) -> Void
  ) {
    let joined = running.withLock { running -> Task<SagaOutcome, Never>? in
      if let task = running[orderId] { return task }
      running[orderId] = Task {
        let outcome = known == nil ? await self.claimAndRun(orderId) : await self.run(orderId, known: known)
        _ = self.running.withLock { $0.removeValue(forKey: orderId) }
        done(outcome)
        return outcome
      }
      return nil
    }
    if let joined { Task { done(await joined.value) } }
  }

  /// How many drives are running (tests, metrics).
  public var drivesInFlight: Int { running.withLock { $0.count } }

  /// Returns once every drive running now has finished, or after `grace`, whichever is first
  /// (on shutdown: a drive cut short is carried on by recovery at the next start).
  func drivesFinished(within grace: Duration) async {
    let drives = running.withLock { Array($0.values) }
    guard !drives.isEmpty else { return }
    let answered = Atomic<Bool>(false)
    await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
      let resume: @Sendable () -> Void = {
        if !answered.exchange(true, ordering: .acquiringAndReleasing) { continuation.resume() }
      }
      Task {
        for drive in drives { _ = await drive.value }
        resume()
      }
      Task {
        try? await Task.sleep(for: grace)
        resume()
      }
    }
  }

  /// Carries on every order the recovery loop finds due.
  public func recover(limit: Int = 100) async throws {
    let store = self.store
    let due = try await runBlocking { try store.due(limit: limit) }
    await withTaskGroup(of: Void.self) { group in
      for orderId in due { group.addTask { _ = await self.drive(orderId) } }
    }
  }

  // MARK: - The loop

  /// Runs the saga for `orderId` if this process can claim it; while another replica drives
  /// it, that drive carries it on.
  private func claimAndRun(_ orderId: String) async -> SagaOutcome {
    let store = self.store
    let claimed: Bool?
    do {
      claimed = try await store.database.onWriterQueue { try store.claim(orderId) }
    } catch {
      logger.warning("claiming an order failed", ["order.id": orderId, "error": "\(error)"])
      return .pending(orderId: orderId)
    }
    switch claimed {
    case true?: return await run(orderId, known: nil)
    case false?: return .pending(orderId: orderId)
    case nil: return .unavailable(.orderNotFound(orderId))
    }
  }

  /// Runs the machine for `orderId` until it finishes. Whatever goes wrong on the way (storage,
  /// a step the machine cannot take) postpones the order: recovery carries it on.
  private func run(_ orderId: String, known: OrderRecord?) async -> SagaOutcome {
    var stepStarted = ContinuousClock.now
    let order: OrderRecord
    do {
      if let known {
        order = known
      } else {
        let store = self.store
        guard let read = try await runBlocking({ try store.order(orderId) }) else {
          return .unavailable(.orderNotFound(orderId))
        }
        order = read
      }
    } catch {
      return await postponed(orderId, after: "\(error)")
    }
    var stepAt = order.step
    var machine = CheckoutMachine(order: order, policy: policy)
    var action = machine.start(now: clock.now())
    while true {
      let event: CheckoutEvent
      let (actionStarted, timed) = (ContinuousClock.now, action.timedKind.flatMap { actionDurations[$0] })
      defer { timed?.observe(Self.seconds(ContinuousClock.now - actionStarted)) }
      switch action {
      case .finish(let end):
        stepDurations[stepAt]?.observe(Self.seconds(ContinuousClock.now - stepStarted))
        switch end {
        case .answered(let reply): return .answered(reply)
        case .pending: return .pending(orderId: orderId)
        case .unavailable(let error): return .unavailable(error)
        }
      case .fail(let reason):
        return await postponed(orderId, after: reason)
      case .askCart(let request):
        event = await askCart(request)
      case .reserve(let request):
        event = await reserve(request)
      case .charge(let request):
        event = await charge(request)
        if fault == .afterCharge, case .paymentAnswered(.approved?) = event { Self.crash() }
      case .lookUpCharge(let key):
        let payments = self.payments
        event = await provider { try await payments.lookup(idempotencyKey: key) }
      case .cancelCharge(let key):
        let payments = self.payments
        event = await provider { try await payments.cancel(idempotencyKey: key) }
      case .readStoredAnswer:
        let store = self.store
        do {
          event = .storedAnswer(try await runBlocking { try store.reply(for: orderId) })
        } catch {
          return await postponed(orderId, after: "\(error)")
        }
      case .record(let change):
        do {
          event = .recorded(try await record(change, of: machine.order))
        } catch {
          return await postponed(orderId, after: "\(error)")
        }
        if fault == .afterReservation, case .reserved = change { Self.crash() }
        if case .priced = change {
          // From here the reservation and the charge are one step of the metrics.
          stepDurations[stepAt]?.observe(Self.seconds(ContinuousClock.now - stepStarted))
          stepStarted = ContinuousClock.now
          stepAt = .priced
        }
      }
      action = machine.handle(event, now: clock.now())
    }
  }

  private func askCart(_ request: CartCheckoutRequest) async -> CheckoutEvent {
    do { return .cartAnswered(try await clients.askCart(request)) } catch { return .cartUnanswered }
  }

  private func reserve(_ request: ReservationRequest) async -> CheckoutEvent {
    do {
      return .reservationAnswered(try await clients.reserve(request))
    } catch RemoteCallError.notSent {
      return .reservationNotSent
    } catch {
      return .reservationUnanswered
    }
  }

  private func charge(_ request: ChargeRequest) async -> CheckoutEvent {
    let event = await provider { [payments] in try await payments.charge(request) as PaymentState? }
    if event == .paymentUnanswered {
      logger.info("charge has no answer yet; it is looked up later", ["order.id": request.reference])
    }
    return event
  }

  /// A provider call within the payment time-out; no answer in time is "unanswered", never failed.
  private func provider(_ call: @escaping @Sendable () async throws -> PaymentState?) async -> CheckoutEvent {
    do {
      return .paymentAnswered(try await payments.within(policy.paymentTimeout, on: deadlines, call))
    } catch {
      return .paymentUnanswered
    }
  }

  // MARK: - Recording

  /// Writes `change` with its answer (as the HTTP layer writes it) and its event; logs and
  /// counts the outcome.
  private func record(_ change: CheckoutRecord, of order: OrderRecord) async throws -> OrderReply? {
    let now = clock.now()
    var reply: OrderReply?
    var event: OutgoingMessage?
    switch change {
    case .needsAction(let paymentId, let action, _, _):
      reply = OrderReply(.needsAction(orderId: order.orderId, paymentId: paymentId, action: action))
    case .confirmed(let paymentId):
      guard let cart = order.cart else { throw OrderStoreError("order \(order.orderId) has no priced cart") }
      reply = OrderReply(.confirmed(orderId: order.orderId, total: cart.totals.total))
      event = OrderEvents.confirmed(order, cart: cart, paymentId: paymentId, id: store.ids.next(), at: now)
    case .declined(_, let reason, let message):
      reply = OrderReply(.declined(orderId: order.orderId, message: message))
      event = try OrderEvents.ended(
        order, type: OrderEventType.declined, reason: reason, message: message, id: store.ids.next(), at: now)
    case .rejected(_, let answer):
      reply = OrderReply(answer)
    case .abandoned(let compensate, let reason, let detail):
      logger.warning(
        "checkout given up before any charge",
        ["order.id": order.orderId, "reason": reason, "detail": detail])
      if compensate {
        event = try OrderEvents.ended(
          order, type: OrderEventType.cancelled, reason: reason, message: nil, id: store.ids.next(), at: now)
      }
    case .priced, .reserved, .charging, .postponed:
      break
    }
    let store = self.store
    let orderId = order.orderId
    let (written, message) = (reply, event)
    let stored = try await store.database.onWriterQueue {
      try store.record(change, of: orderId, reply: written, event: message)
    }
    switch change {
    case .confirmed(let paymentId):
      count("confirmed")
      logger.info("order confirmed", ["order.id": orderId, "payment.id": paymentId])
    case .declined(_, let reason, _):
      count("declined")
      logger.info("order declined", ["order.id": orderId, "reason": reason])
    case .needsAction: count("needsAction")
    case .rejected: count("rejected")
    case .abandoned: count("abandoned")
    case .priced, .reserved, .charging, .postponed: break
    }
    return stored
  }

  /// This drive stops without an answer: the order is tried again after its back-off.
  private func postponed(_ orderId: String, after reason: String) async -> SagaOutcome {
    logger.warning("checkout step failed; recovery carries it on", ["order.id": orderId, "error": reason])
    let store = self.store
    _ = try? await store.database.onWriterQueue {
      try store.record(.postponed, of: orderId, reply: nil, event: nil)
    }
    count("postponed")
    return .pending(orderId: orderId)
  }

  private func count(_ outcome: String) { outcomes[outcome]?.increment() }

  private static func seconds(_ duration: Duration) -> Double {
    Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
  }

  /// Dies at once, as `kill -9` would: no clean-up, no flush (fault drills only).
  private static func crash() -> Never {
    kill(getpid(), SIGKILL)
    fatalError("SIGKILL did not stop the process")
  }
}

/// The kinds of saga action `checkout_action_seconds` is labelled with: those that wait on
/// something.
enum TimedCheckoutAction: String, CaseIterable {
  case askCart, reserve, charge, lookUpCharge, cancelCharge, readStoredAnswer, record
}

extension CheckoutAction {
  /// Its label in `checkout_action_seconds` (nil: it ends or fails the run).
  var timedKind: TimedCheckoutAction? {
    switch self {
    case .askCart: .askCart
    case .reserve: .reserve
    case .charge: .charge
    case .lookUpCharge: .lookUpCharge
    case .cancelCharge: .cancelCharge
    case .readStoredAnswer: .readStoredAnswer
    case .record: .record
    case .finish, .fail: nil
    }
  }
}
