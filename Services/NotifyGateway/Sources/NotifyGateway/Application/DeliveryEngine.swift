import APNsSimulator
import Foundation
import GrocerContracts
import GrocerCore
import GrocerRuntime
import GrocerStorage
import Synchronization

/// The use case "deliver due pushes", run as a lifecycle service: sends what is due (the newest
/// pending update of each Live Activity, as `PushPolicy` decides, and queued alerts) through the
/// transport, many at once; then records what each answer means (`PushDelivery`) for the whole
/// round in one transaction, with a `push.delivered` or `push.failed` for each push that ended.
/// A round first claims what it sends, so replicas on one database never send one activity's
/// pushes at once (its budget and order hold) nor one alert twice.
public final class DeliveryEngine: LifecycleService {
  public let name = "push-delivery"
  public struct Options: Sendable {
    public var bundleID: String
    /// Requests in flight at once.
    public var concurrency = 64
    /// Rows fetched per round.
    public var batch = 512
    /// Told of every delivered Live Activity push (the load tool times them from publishing).
    public var onDelivered: (@Sendable (DeliveredPush) -> Void)?
    /// This replica's name on its claims; a restarted replica with the same one takes them back.
    public var sender = "notify-gateway"
    /// How long a claim holds unrecorded: well past one round's sends at APNs's slowest, so only
    /// a replica that stopped loses its claims (and another sends them after this long).
    public var claim: TimeInterval = 30
    /// How often activities near their eight hours are looked for (`PushPolicy.endAtLimit`).
    public var sweepInterval: TimeInterval = 10
    /// Push-to-start's budget (the wait is `NotifyCommands`'s).
    public var start = LiveActivityStartPolicy()
    /// How long an alert instead of a start is worth delivering.
    public var alertLifetime: TimeInterval = 600

    public init(bundleID: String) { self.bundleID = bundleID }
  }

  /// Each push's `apns-id` (a lowercase UUID, as APNs wants): drawn with `getrandom`, where
  /// Foundation's `UUID()` opens and reads `/dev/urandom` on every call on Linux.
  static let apnsIDs = RandomIDs()
  /// The push outcome events' ids.
  private let eventIDs: any IDGenerator
  let store: NotifyStore
  let transport: any APNsTransport
  let policy: PushPolicy
  let options: Options
  let clock: any WallClock
  let logger: Logger
  private let wakeSignal = WakeSignal()
  private let loop = BackgroundLoop()
  private let lastPurge = Mutex<ContinuousClock.Instant?>(nil)
  let lastSweep = Mutex<Date?>(nil)
  private let random = Mutex(SplitMix64(seed: UInt64(UInt32.random(in: 1...UInt32.max))))
  private let metrics: MetricsRegistry
  private let pushCounters = Mutex<[PushCounterKey: Counter]>([:])
  private let downgrades: Counter
  let dropped: Counter
  private let latency: Histogram

  public init(
    store: NotifyStore, transport: any APNsTransport, policy: PushPolicy, options: Options,
    clock: any WallClock,
    logger: Logger, metrics: MetricsRegistry, eventIDs: any IDGenerator = TimeOrderedIDs()
  ) {
    self.eventIDs = eventIDs
    self.store = store
    self.transport = transport
    self.policy = policy
    self.options = options
    self.clock = clock
    self.logger = logger
    self.metrics = metrics
    downgrades = metrics.counter(
      "push_downgrades_total", help: "Priority-10 updates sent at 5: budget used up.")
    dropped = metrics.counter("push_dropped_total", help: "Updates and alerts given up: expired or refused.")
    latency = metrics.histogram(
      "push_receive_to_push_seconds",
      help: "From receiving the event to APNs's answer (event times are whole seconds, too coarse).")
  }

  /// Something became due (a consumer committed): look now instead of at the next poll.
  public func wake() { wakeSignal.notify() }

  public func start() async throws {
    loop.start { [self] in
      while !Task.isCancelled {
        let worked = await round()
        if !worked { await wakeSignal.wait(timeout: .milliseconds(100)) }
      }
    }
  }

  public func shutdown() async {
    await loop.stop()
  }

  /// Returns when the delivery loop has ended.
  public func finished() async throws {
    try await loop.finished()
  }

  /// One round: everything due now, `concurrency` at a time. False when nothing was due.
  @discardableResult
  public func round() async -> Bool {
    let store = self.store
    let batch = options.batch
    let now = clock.now()
    let (sender, until) = (options.sender, now + options.claim)
    // Now and then, activities near their eight hours with no update to end them.
    let agingBefore = sweepIsDue(now) ? now - (policy.maximumLifetime - policy.endingMargin) : nil
    let notBefore = now - policy.maximumLifetime
    let due:
      (
        [NotifyStore.DueUpdate], [NotifyStore.DueAlert], [NotifyStore.AgingActivity], [NotifyStore.DueStart],
        [NotifyStore.DueNotice]
      )
    do {
      due = try await store.database.writeAsync { db in
        let updates = try store.dueUpdates(at: now, limit: batch, sender: sender, in: db)
        try store.claimActivities(updates.map(\.orderId), sender: sender, until: until, in: db)
        let alerts = try store.dueAlerts(at: now, limit: batch, sender: sender, in: db)
        try store.claimAlerts(alerts.map(\.seq), sender: sender, until: until, in: db)
        let aging =
          try agingBefore.map {
            try store.agingActivities(
              startedBefore: $0, startedAfter: notBefore, at: now, limit: batch, sender: sender, in: db)
          } ?? []
        try store.claimActivities(aging.map(\.orderId), sender: sender, until: until, in: db)
        let starts = try store.dueStarts(at: now, limit: batch, sender: sender, in: db)
        try store.claimStarts(starts, sender: sender, until: until, in: db)
        let notices = try store.dueNotices(at: now, limit: batch, sender: sender, in: db)
        try store.claimNotices(notices.map(\.notice.noticeId), sender: sender, until: until, in: db)
        return (updates, alerts, aging, starts, notices)
      }
    } catch {
      logger.error("reading due pushes failed", ["error": "\(error)"])
      return false
    }
    guard !due.0.isEmpty || !due.1.isEmpty || !due.2.isEmpty || !due.3.isEmpty || !due.4.isEmpty else {
      await purgeWhenIdle()
      return false
    }
    let updates: [@Sendable () async -> Record] = due.0.map { update in
      { @Sendable in await self.deliver(update) }
    }
    let alerts: [@Sendable () async -> Record] = due.1.map { alert in
      { @Sendable in await self.deliver(alert) }
    }
    let endings: [@Sendable () async -> Record] = due.2.map { activity in
      { @Sendable in await self.end(activity) }
    }
    // One job per customer, their orders in turn: each device's budget sees the starts before.
    let starts: [@Sendable () async -> Record] = Dictionary(grouping: due.3, by: \.userId).values.map {
      orders in
      { @Sendable in await self.start(orders) }
    }
    let notices: [@Sendable () async -> Record] = due.4.map { notice in
      { @Sendable in await self.broadcast(notice) }
    }
    let jobs = updates + alerts + endings + starts + notices
    let records = await withTaskGroup(of: Record.self) { group -> [Record] in
      var records: [Record] = []
      var next = 0
      while next < jobs.count, next < options.concurrency {
        group.addTask(operation: jobs[next])
        next += 1
      }
      while let record = await group.next() {
        records.append(record)
        if next < jobs.count {
          group.addTask(operation: jobs[next])
          next += 1
        }
      }
      return records
    }
    // Every answer of the round recorded in one transaction (each in its own savepoint).
    do {
      try await store.database.onWriterQueue {
        for record in records {
          do {
            switch record {
            case .update(let update, let outcome, let ended):
              try self.record(outcome, of: update, ended: ended)
            case .alert(let alert, let outcome, let ended): try self.record(outcome, of: alert, ended: ended)
            case .ending(let activity, let outcome, let ended):
              try self.record(outcome, ofEnding: activity, ended: ended)
            case .starting(let orders):
              for (start, devices) in orders { try self.record(devices, of: start) }
            case .notice(let notice, let outcome, let channel, let ended):
              try self.record(outcome, of: notice, channel: channel, ended: ended)
            }
          } catch {
            self.logger.error("recording a push failed", ["error": "\(error)"])
          }
        }
      }
    } catch {
      logger.error("recording pushes failed; they will be sent again", ["error": "\(error)"])
    }
    return true
  }

  /// How one due push ended, to be recorded with the rest of its round; `ended` is the event
  /// to publish when the push reached a final answer (nil: not sent, or tried again later).
  enum Record: Sendable {
    case update(NotifyStore.DueUpdate, PushDelivery.UpdateOutcome, ended: PushOutcome?)
    case alert(NotifyStore.DueAlert, PushDelivery.AlertOutcome, ended: PushOutcome?)
    /// The end of an activity near its eight hours (`PushPolicy.endAtLimit`).
    case ending(NotifyStore.AgingActivity, PushDelivery.UpdateOutcome, ended: PushOutcome?)
    /// What push-to-start did on each of the customer's devices.
    case starting([(NotifyStore.DueStart, [StartOnDevice])])
    /// A hub notice's broadcast, and what became of the hub's channel.
    case notice(NotifyStore.DueNotice, NoticeOutcome, channel: ChannelChange?, ended: PushOutcome?)
  }

  /// Records how `update` ended, unless a newer update replaced it meanwhile (then only the
  /// activity's state is kept, and the newer one stays pending), and publishes a final answer.
  func record(_ outcome: PushDelivery.UpdateOutcome, of update: NotifyStore.DueUpdate, ended: PushOutcome?)
    throws
  {
    let store = self.store
    let sender = options.sender
    let (orderId, version) = (update.orderId, update.snapshot.version)
    try store.database.write { db in
      try self.publish(ended, correlationID: update.correlationID, in: db)
      // The pending update goes (or waits again) only if it is still this version.
      switch outcome {
      case .handled(let state):
        // Saving the state lets the claim go too. Sent to a token that was replaced meanwhile,
        // nothing is saved: the new activity has not seen it, so the update stays pending for it
        // and the activity's state is not the old one's.
        if try store.saveActivityState(
          state, orderId: orderId, token: update.token, releasing: sender, in: db)
        {
          try store.deletePending(orderId, version: version, in: db)
          return
        }
      case .retry(let at): try store.retryPending(orderId, version: version, at: at, in: db)
      case .dropped: try store.deletePending(orderId, version: version, in: db)
      case .tokenGone: try store.forgetActivityToken(orderId, token: update.token, in: db)
      }
      try store.releaseActivity(orderId, sender: sender, in: db)
    }
  }

  /// Records how an alert ended: done (delivered, dropped), retried later, or its device gone.
  func record(_ outcome: PushDelivery.AlertOutcome, of alert: NotifyStore.DueAlert, ended: PushOutcome?)
    throws
  {
    let store = self.store
    try store.database.write { db in
      try self.publish(ended, correlationID: alert.correlationID, in: db)
      switch outcome {
      case .retry(let at): try store.retryAlert(alert.seq, at: at, in: db)
      case .delivered, .dropped: try store.deleteAlert(alert.seq, in: db)
      case .tokenGone:
        try store.deleteAlert(alert.seq, in: db)
        try store.forgetDevice(alert.token, in: db)
      }
    }
  }

  /// `push.delivered` (APNs said 200) or `push.failed` into the outbox, with the request id of
  /// what caused the push.
  func publish(_ ended: PushOutcome?, correlationID: String?, in db: any SQLConnection) throws {
    guard let ended else { return }
    try store.append(
      ended.message(id: eventIDs.next(), delivered: ended.status == 200, correlationId: correlationID), in: db
    )
  }

  /// When nothing is due, now and then: forget what can no longer be delivered.
  private func purgeWhenIdle() async {
    let now = ContinuousClock.now
    let due = lastPurge.withLock { last -> Bool in
      guard last.map({ now - $0 >= .seconds(10) }) ?? true else { return false }
      last = now
      return true
    }
    guard due else { return }
    let (store, clock) = (self.store, self.clock)
    do {
      let removed = try await store.database.onWriterQueue {
        try store.database.write { try store.deleteUndeliverable(at: clock.now(), in: $0) }
      }
      if removed > 0 { dropped.increment(by: removed) }
    } catch {
      logger.error("purging undeliverable pushes failed", ["error": "\(error)"])
    }
  }

  // MARK: - Live Activity updates

  private func deliver(_ update: NotifyStore.DueUpdate) async -> Record {
    let now = clock.now()
    func ended(
      _ sent: (request: APNsRequest, push: PushPolicy.Push)?, _ response: APNsResponse?, reason: String? = nil
    ) -> PushOutcome {
      let answeredAt = clock.now()
      return PushOutcome(
        pushId: sent?.request.id ?? Self.apnsIDs.next(), tokenKind: .liveActivity, token: update.token,
        orderId: update.orderId, userId: update.userId, pushType: APNsRequest.PushType.liveactivity.rawValue,
        event: sent?.push.event.rawValue, version: update.snapshot.version,
        priority: sent?.push.priority ?? 5,
        status: response?.status, reason: response?.reason ?? reason,
        latencyMs: Self.milliseconds(from: update.enqueuedAt, to: answeredAt), answeredAt: answeredAt,
        staleDate: sent.flatMap {
          response?.status == 200
            ? PushPayloads.staleDate(event: $0.push.event, timestamp: $0.push.timestamp) : nil
        })
    }
    // Never past its expiration, however late the round came to it.
    guard PushDelivery.isWorthSending(expiresAt: update.expiresAt, now: now) else {
      dropped.increment()
      return .update(update, .dropped, ended: ended(nil, nil, reason: "Expired"))
    }
    let (decision, next) = policy.decide(update.snapshot, state: update.state, now: now)
    guard case .send(let push) = decision else { return .update(update, .handled(next), ended: nil) }
    let request = APNsRequest(
      token: update.token, pushType: .liveactivity, topic: options.bundleID + APNsRules.liveActivitySuffix,
      priority: push.priority, expiration: update.expiresAt, id: Self.apnsIDs.next(),
      payload: PushPayloads.liveActivity(
        LiveActivityContent(update.snapshot), event: push.event, alert: push.alert, timestamp: push.timestamp,
        relevance: push.relevance))
    let response = await send(request)
    count(request, response)
    let answer = Self.answer(response)
    switch answer {
    case .delivered:
      if push.downgraded { downgrades.increment() }
      latency.observe(max(0, clock.now().timeIntervalSince(update.enqueuedAt)))
      options.onDelivered?(DeliveredPush(orderId: update.orderId, version: update.snapshot.version))
    case .tokenGone:
      logger.info(
        "Live Activity token gone", ["order.id": update.orderId, "apns.reason": response?.reason ?? ""])
    case .refused:
      logger.warning(
        "APNs refused a Live Activity push",
        ["order.id": update.orderId, "apns.reason": response?.reason ?? ""])
    case .tryAgain: break
    }
    let outcome = PushDelivery.outcome(
      of: answer, next: next, attempts: update.attempts, expiresAt: update.expiresAt, now: clock.now(),
      jitter: answer == .tryAgain ? jitter() : 1)
    if outcome == .dropped { dropped.increment() }
    if case .retry = outcome { return .update(update, outcome, ended: nil) }
    return .update(
      update, outcome, ended: ended((request, push), response, reason: response == nil ? "NoAnswer" : nil))
  }

  static func milliseconds(from start: Date, to end: Date) -> Int {
    max(0, Int((end.timeIntervalSince(start) * 1000).rounded()))
  }

  // MARK: - Alerts

  /// An alert, or a finished order's background push (priority 5, as Apple requires of one).
  private func deliver(_ alert: NotifyStore.DueAlert) async -> Record {
    let (pushType, priority, payload): (APNsRequest.PushType, Int, [UInt8])
    switch alert.kind {
    case .alert:
      (pushType, priority, payload) = (.alert, 10, PushPayloads.alert(alert.text, orderId: alert.orderId))
    case .refresh(let status):
      (pushType, priority, payload) = (
        .background, 5, PushPayloads.refresh(orderId: alert.orderId, status: status)
      )
    }
    func ended(_ request: APNsRequest?, _ response: APNsResponse?, reason: String? = nil) -> PushOutcome {
      let answeredAt = clock.now()
      return PushOutcome(
        pushId: request?.id ?? Self.apnsIDs.next(), tokenKind: .device, token: alert.token,
        orderId: alert.orderId,
        userId: alert.userId, pushType: pushType.rawValue, priority: priority,
        status: response?.status,
        reason: response?.reason ?? reason,
        latencyMs: Self.milliseconds(from: alert.occurredAt, to: answeredAt),
        answeredAt: answeredAt)
    }
    guard PushDelivery.isWorthSending(expiresAt: alert.expiresAt, now: clock.now()) else {
      dropped.increment()
      return .alert(alert, .dropped, ended: ended(nil, nil, reason: "Expired"))
    }
    let request = APNsRequest(
      token: alert.token, pushType: pushType, topic: options.bundleID, priority: priority,
      expiration: alert.expiresAt, id: Self.apnsIDs.next(), payload: payload)
    let response = await send(request)
    count(request, response)
    let answer = Self.answer(response)
    let outcome = PushDelivery.outcome(
      ofAlert: answer, attempts: alert.attempts, expiresAt: alert.expiresAt, now: clock.now(),
      jitter: answer == .tryAgain ? jitter() : 1)
    if outcome == .dropped { dropped.increment() }
    if case .retry = outcome { return .alert(alert, outcome, ended: nil) }
    return .alert(alert, outcome, ended: ended(request, response, reason: response == nil ? "NoAnswer" : nil))
  }

  // MARK: - Helpers

  /// The transport's answer; nil when none came (counted, retried like a 5xx).
  func send(_ request: APNsRequest) async -> APNsResponse? {
    do { return try await transport.send(request) } catch {
      logger.warning("no answer from APNs", ["error": "\(error)"])
      return nil
    }
  }

  /// APNs's answer as delivery sees it; none at all is tried again, like a 5xx.
  static func answer(_ response: APNsResponse?) -> PushDelivery.Answer {
    switch response?.disposition {
    case .delivered?: .delivered
    case .removeToken?: .tokenGone
    case .failed?: .refused
    case .retry?, nil: .tryAgain
    }
  }

  /// A random factor for the next retry's wait (`PushDelivery.jitter`).
  func jitter() -> Double { PushDelivery.jitter(random.withLock { $0.next() }) }

  func count(_ request: APNsRequest, _ response: APNsResponse?) {
    let result = response.map { $0.status == 200 ? "ok" : ($0.reason ?? "\($0.status)") } ?? "noAnswer"
    let key = PushCounterKey(type: request.pushType.rawValue, priority: request.priority, result: result)
    // Looked up in the registry once per kind: by name and rendered labels it costs more than the push.
    let counter =
      pushCounters.withLock { $0[key] }
      ?? {
        let counter = metrics.counter(
          "pushes_total", help: "Pushes by type, priority and APNs result.",
          labels: [("type", key.type), ("priority", String(key.priority)), ("result", key.result)])
        pushCounters.withLock { $0[key] = counter }
        return counter
      }()
    counter.increment()
  }

  struct PushCounterKey: Hashable {
    var type: String
    var priority: Int
    var result: String
  }
}

/// A Live Activity push APNs accepted: which order's which version.
public struct DeliveredPush: Sendable, Hashable {
  public var orderId: String
  public var version: Int64
}
