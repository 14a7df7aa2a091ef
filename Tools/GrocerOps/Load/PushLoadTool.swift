import Foundation
import GrocerAMQP
import GrocerAuth
import GrocerContracts
import GrocerCore
import GrocerHTTP
import GrocerHTTPServer
import GrocerRabbitMQ
import GrocerRuntime
import NotifyGateway
import Synchronization

/// The push load tool (`grocer load push`): a `notify-gateway` in a process of its own, with its
/// built-in APNs simulator, fed through the real broker, so what it reports of memory and CPU is
/// the gateway's alone. It registers N Live Activities (`liveActivity.token`), then publishes
/// `tracking.updated` for them at a fixed rate for a while — mostly ETA drifts (priority 5),
/// every fourth a stage change (priority 10, on the budget), every tenth a rider-only move — and
/// reports what APNs received (the simulator's journal, read once the gateway stopped): pushes per
/// second, event-to-push latency percentiles, downgrades, coalesced and dropped updates, APNs
/// answers, the gateway's peak memory and CPU per push; as text and as an SVG chart over time.
/// With `starts`, as many orders are confirmed over the run without an activity token, each to a
/// device registered with a push-to-start token: their start pushes (and confirmation alerts) mix in.
public final class PushLoadTool: Sendable {
  public struct Options: Sendable {
    public var orders = 2000
    /// `tracking.updated` events per second.
    public var rate = 1000
    public var seconds = 60
    public var hourlyBudget = 12
    /// Orders confirmed over the run that the gateway starts by push (each on a device of its own).
    public var starts = 0
    /// Where `push-load.svg` goes (nil: no chart).
    public var chartPath: String?
    /// The `notify-gateway` to run: by default the one beside this executable.
    public var gatewayPath = GatewayProcess.besideThisExecutable("notify-gateway")
    public var settings: Settings

    public init(settings: Settings) { self.settings = settings }
  }

  /// One second of the run.
  public struct Second: Sendable, Hashable {
    public var published: Int
    public var pushes: Int
    public var p99: Double
  }

  public struct Report: Sendable, CustomStringConvertible {
    public var options: Options
    public var published = 0
    public var pushes = 0
    public var seconds: Double = 0
    public var latencies: [Double] = []
    public var downgrades = 0
    public var coalesced = 0
    public var dropped = 0
    public var answers: [String: Int] = [:]
    /// Start pushes APNs accepted, of `options.starts`.
    public var startsDelivered = 0
    /// The gateway process's largest resident set.
    public var peakMemoryMB = 0.0
    /// CPU the gateway and this tool used from the timed run's start to the drain's end.
    public var gatewayCPUSeconds = 0.0
    public var toolCPUSeconds = 0.0
    public var timeline: [Second] = []

    public func percentile(_ p: Double) -> Double {
      guard !latencies.isEmpty else { return 0 }
      let sorted = latencies.sorted()
      return sorted[min(sorted.count - 1, Int((Double(sorted.count) * p).rounded(.up)) - 1)]
    }

    public var description: String {
      func ms(_ seconds: Double) -> String { String(format: "%.1f ms", seconds * 1000) }
      func perPush(_ seconds: Double) -> String {
        String(format: "%.3f ms", seconds * 1000 / Double(max(pushes, 1)))
      }
      return """
        push load: \(options.orders) activities, \(options.rate) tracking.updated/s for \(options.seconds) s, \(options.starts) started by push
          events published     \(published)
          pushes delivered     \(pushes) (\(String(format: "%.0f", Double(pushes) / max(seconds, 0.001))) /s over \(String(format: "%.1f", seconds)) s)
          events through       \(String(format: "%.0f", Double(published) / max(seconds, 0.001))) /s (pushed, or replaced by a newer one before)
          event → push         p50 \(ms(percentile(0.5)))  p95 \(ms(percentile(0.95)))  p99 \(ms(percentile(0.99)))  max \(ms(latencies.max() ?? 0))
          downgraded to p5     \(downgrades)
          coalesced            \(coalesced)
          dropped              \(dropped)
          APNs answers         \(answers.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(separator: ", "))
          start pushes         \(startsDelivered) of \(options.starts)
          peak memory          \(String(format: "%.0f", peakMemoryMB)) MB (the gateway's process)
          CPU a push           gateway \(perPush(gatewayCPUSeconds)), load tool \(perPush(toolCPUSeconds))
        """
    }
  }

  private let options: Options
  private let logger: Logger
  /// The events' ids, time-ordered as TrackingService's are (the gateway's inbox keys them).
  private let eventIDs = TimeOrderedIDs()

  public init(options: Options, logger: Logger) {
    self.options = options
    self.logger = logger
  }

  public func run(progress: @escaping @Sendable (String) -> Void = { _ in }) async throws -> Report {
    let unique = String(UUID().uuidString.prefix(8)).lowercased()
    let queue = "push-load-\(unique)"
    let dataDirectory = NSTemporaryDirectory() + "grocer-push-load-\(unique)"
    defer { try? FileManager.default.removeItem(atPath: dataDirectory) }
    let gateway = try await GatewayProcess(
      executable: options.gatewayPath, dataDirectory: dataDirectory,
      overrides: [
        "GROCER_SERVICE_NAME": queue, "GROCER_PUSH_HOURLY_BUDGET": "\(options.hourlyBudget)",
        "GROCER_QUEUE_EXPIRES": "600", "GROCER_APNS_TRANSPORT": "simulator", "GROCER_APNS_SIM_BURST": "1000",
        "GROCER_APNS_SIM_JOURNAL": "1", "GROCER_LIVE_ACTIVITY_START_AFTER": "1",
        "GROCER_LOG_LEVEL": "warning",
      ])
    let publisher = AMQPPublisher(
      configuration: AMQPConfiguration(settings: options.settings, connectionName: "\(queue)-load"),
      logger: logger, metrics: MetricsRegistry())
    // The run's queue goes when it ends: one left bound would take a copy of every later run's
    // events (and tie up the broker writing them).
    let amqp = AMQPConfiguration(settings: options.settings, connectionName: "\(queue)-admin")
    do {
      try await publisher.start()
      let report = try await measure(
        gateway: gateway, publisher: publisher, queue: queue, unique: unique, progress: progress)
      await stop(gateway: gateway, publisher: publisher, amqp: amqp, queue: queue)
      return report
    } catch {
      await stop(gateway: gateway, publisher: publisher, amqp: amqp, queue: queue)
      throw error
    }
  }

  private func stop(gateway: GatewayProcess, publisher: AMQPPublisher, amqp: AMQPConfiguration, queue: String)
    async
  {
    await publisher.shutdown()
    await gateway.stop()
    try? await AMQPAdmin.deleteQueues(configuration: amqp, [queue, queue + ".parking"])
  }

  private func measure(
    gateway: GatewayProcess, publisher: AMQPPublisher, queue: String, unique: String,
    progress: @escaping @Sendable (String) -> Void
  ) async throws -> Report {
    guard await publisher.waitUntilConnected(timeout: .seconds(15)) else {
      throw LoadError(description: "the broker is not reachable (GROCER_AMQP_URL)")
    }
    let consumed = { @Sendable in
      (try? await gateway.metrics().sum("events_consumed_total", [("queue", queue)])) ?? 0
    }

    // The activities. Their snapshots are stamped `base` + version seconds, so a push's
    // `timestamp` names the version it carries.
    let orders = (0..<options.orders).map { "load-\(unique)-\($0)" }
    let activityTokens = orders.indices.map {
      String(format: "%016x", $0) + String(repeating: "ab", count: 72)
    }
    let base = Date(timeIntervalSince1970: Date().timeIntervalSince1970.rounded(.down))
    for chunk in stride(from: 0, to: orders.count, by: 500) {
      let messages = try (chunk..<min(chunk + 500, orders.count)).map { index in
        try EventEnvelope(
          id: "\(orders[index])-token", type: TrackingEventType.liveActivityToken, occurredAt: base,
          source: "push-load", correlationId: nil, subject: EventSubject.liveActivity(orders[index]),
          sequence: 1,
          payload: LiveActivityToken(
            orderId: orders[index], userId: "u-\(orders[index])", hub: "h1", token: activityTokens[index])
        ).message()
      }
      try await publisher.publish(messages)
    }
    progress("registering \(orders.count) Live Activities…")
    guard await Self.eventually(seconds: 60, { await consumed() >= Double(orders.count) }) else {
      throw LoadError(description: "the activities did not all arrive within 60 s")
    }
    // The devices whose orders the gateway starts by push, registered as the app does.
    let startTokens = (0..<options.starts).map {
      String(format: "5%015x", $0) + String(repeating: "cd", count: 40)
    }
    try await registerStartDevices(startTokens, unique: unique, gateway: gateway)

    // The timed run: a tick every 10 ms publishes what is due by then (open loop).
    var report = Report(options: options)
    // Per activity: its last version, and when each version was published (in order).
    var versions = [Int64](repeating: 0, count: orders.count)
    var publishedAt = [[Double]](repeating: [], count: orders.count)
    var publishedPerSecond: [Int] = []
    var next = 0
    var published = 0
    var startsSent = 0
    let total = options.rate * options.seconds
    let (gatewayCPU, toolCPU) = (gateway.cpuSeconds, ProcessUsage.cpuSeconds("self"))
    let startedAt = Date().timeIntervalSince1970
    let start = ContinuousClock.now
    // Pushes per second while it runs. Stopped by a flag: FoundationNetworking traps when a task
    // awaiting a request is cancelled.
    let shown = Atomic(0)
    let displaying = Atomic(true)
    let display = Task {
      var last = 0.0
      while displaying.load(ordering: .relaxed) {
        try? await Task.sleep(for: .seconds(1))
        guard let pushes = try? await gateway.metrics().sum("pushes_total", [("result", "ok")]) else {
          continue
        }
        progress(Self.bar(shown.load(ordering: .relaxed), of: total) + " \(Int(pushes - last)) pushes/s")
        last = pushes
      }
    }
    defer { displaying.store(false, ordering: .relaxed) }
    while published < total {
      let elapsed = Self.seconds(ContinuousClock.now - start)
      let due = min(total, Int(elapsed * Double(options.rate)))
      var batch: [OutgoingMessage] = []
      var batchOrders: [Int] = []
      while published < due {
        let index = next % orders.count
        next += 1
        versions[index] += 1
        batch.append(update(orders[index], version: versions[index], base: base))
        batchOrders.append(index)
        published += 1
        // The starts spread evenly over the run.
        while startsSent < startTokens.count && startsSent * total <= published * startTokens.count {
          batch.append(
            try confirmed("load-\(unique)-start-\(startsSent)", user: "su-\(unique)-\(startsSent)"))
          startsSent += 1
        }
      }
      if !batch.isEmpty {
        let sentAt = Date().timeIntervalSince1970
        for index in batchOrders { publishedAt[index].append(sentAt) }
        let second = Int(elapsed)
        while publishedPerSecond.count <= second { publishedPerSecond.append(0) }
        publishedPerSecond[second] += batchOrders.count
        shown.store(published, ordering: .relaxed)
        try await publisher.publish(batch)
      }
      try await Task.sleep(for: .milliseconds(10))
    }
    displaying.store(false, ordering: .relaxed)
    await display.value

    // Drain: everything published is consumed, and pushes stopped coming for 2 s (the starts go
    // out a second after their order is confirmed).
    let expected = Double(published + orders.count + startsSent)
    var (lastPushes, steadySince) = (-1.0, ContinuousClock.now)
    let deadline = ContinuousClock.now + .seconds(30)
    var final = MetricSamples(text: "")
    while ContinuousClock.now < deadline {
      final = try await gateway.metrics()
      let pushes = final.sum("pushes_total")
      if pushes != lastPushes {
        (lastPushes, steadySince) = (pushes, ContinuousClock.now)
      } else if final.sum("events_consumed_total", [("queue", queue)]) >= expected
        && ContinuousClock.now - steadySince >= .seconds(2)
      {
        break
      }
      try await Task.sleep(for: .milliseconds(100))
    }
    report.published = published
    report.pushes = Int(final.sum("pushes_total", [("result", "ok")]))
    report.answers = final.byLabel("pushes_total", "result").mapValues { Int($0) }
    report.downgrades = Int(final.sum("push_downgrades_total"))
    report.coalesced = Int(final.sum("push_coalesced_total"))
    report.dropped = Int(final.sum("push_dropped_total"))
    report.peakMemoryMB = gateway.peakResidentMB
    report.gatewayCPUSeconds = gateway.cpuSeconds - gatewayCPU
    report.toolCPUSeconds = ProcessUsage.cpuSeconds("self") - toolCPU

    // What APNs received, from the simulator's journal once the gateway wrote it and stopped.
    await gateway.stop()
    let journal = try SimulatorJournalStore(dataDirectory: gateway.dataDirectory, logger: logger)
    let orderOfToken = Dictionary(uniqueKeysWithValues: activityTokens.enumerated().map { ($1, $0) })
    let starts = Set(startTokens)
    var pushesPerSecond: [Int: Int] = [:]
    var latenciesPerSecond: [Int: [Double]] = [:]
    var lastPush = startedAt
    for push in try journal.pushes() where push.status == 200 {
      let receivedAt = push.receivedAt.timeIntervalSince1970
      let second = Int(receivedAt - startedAt)
      pushesPerSecond[second, default: 0] += 1
      if starts.contains(push.token) { report.startsDelivered += 1 }
      guard let index = orderOfToken[push.token], let stamp = Self.timestamp(in: push.body) else { continue }
      lastPush = max(lastPush, receivedAt)
      let version = stamp - Int(base.timeIntervalSince1970)
      guard version >= 1 && version <= publishedAt[index].count else { continue }
      let latency = receivedAt - publishedAt[index][version - 1]
      report.latencies.append(latency)
      latenciesPerSecond[second, default: []].append(latency)
    }
    // Until the last update was answered (not the drain's polling after it, nor the starts,
    // which wait a second after their order is confirmed).
    report.seconds = lastPush - startedAt
    let seconds = max(publishedPerSecond.count, (pushesPerSecond.keys.max() ?? 0) + 1)
    report.timeline = (0..<seconds).map { second in
      let window = (latenciesPerSecond[second] ?? []).sorted()
      return Second(
        published: second < publishedPerSecond.count ? publishedPerSecond[second] : 0,
        pushes: pushesPerSecond[second] ?? 0,
        p99: window.isEmpty ? 0 : window[min(window.count - 1, Int(Double(window.count) * 0.99))])
    }
    if let path = options.chartPath {
      try Self.chart(report).write(toFile: path, atomically: true, encoding: .utf8)
    }
    return report
  }

  /// Registers one device per start token, each for a user of its own, through the gateway's API.
  private func registerStartDevices(_ startTokens: [String], unique: String, gateway: GatewayProcess)
    async throws
  {
    let signer = HS256Signer(
      secret: options.settings.string("GROCER_JWT_SECRET", default: Settings.localJWTSecret))
    let now = Date()
    try await withThrowingTaskGroup(of: Void.self) { group in
      for (index, startToken) in startTokens.enumerated() {
        if index >= 8 { try await group.next() }
        group.addTask {
          let device = String(format: "%016x", index) + String(repeating: "ef", count: 24)
          let bearer = signer.sign(
            claims: TokenClaims(subject: "su-\(unique)-\(index)", issuedAt: now, expiresAt: now + 3600))
          try await gateway.put("/v1/devices/\(device)", bearer: bearer)
          try await gateway.put(
            "/v1/devices/\(device)/live-activity-start-token", bearer: bearer,
            body: "{\"token\":\"\(startToken)\"}")
        }
      }
      try await group.waitForAll()
    }
  }

  /// The `aps.timestamp` of a Live Activity push's body (the only `timestamp` key it has).
  static func timestamp(in body: [UInt8]) -> Int? {
    let key = Array("\"timestamp\":".utf8)
    guard body.count > key.count,
      let at = (0...(body.count - key.count)).first(where: { body[$0..<($0 + key.count)].elementsEqual(key) })
    else { return nil }
    var value = 0
    var index = at + key.count
    while index < body.count, body[index] == UInt8(ascii: " ") { index += 1 }
    let first = index
    while index < body.count, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(body[index]) {
      value = value * 10 + Int(body[index] - UInt8(ascii: "0"))
      index += 1
    }
    return index > first ? value : nil
  }

  /// The `version`th update of `order`: ETA drift mostly, a stage change every fourth, a rider
  /// move every tenth.
  private func update(_ order: String, version: Int64, base: Date) -> OutgoingMessage {
    let stage: TrackingStatus = (version / 4).isMultiple(of: 2) ? .onTheWay : .problem
    let riderOnly = version % 10 == 0
    let drift = Double(riderOnly ? version - 1 : version) * 120
    let generatedAt = Date()
    let snapshot = TrackingSnapshot(
      orderId: order, version: version, status: stage, problem: stage == .problem ? "Rider delayed" : nil,
      eta: ETARange(earliest: base + 600 + drift, latest: base + 900 + drift),
      rider: RiderView(
        firstName: "Ana", lat: 52.5 + Double(version) * 0.0001, lng: 13.4, recordedAt: generatedAt),
      destination: GeoPoint(lat: 52.53, lng: 13.41), generatedAt: base + Double(version))
    let changed: [TrackingChange] = riderOnly ? [.rider] : (version % 4 == 0 ? [.stage, .eta] : [.eta])
    // One pass, as TrackingService writes it: the generator shares the gateway's cores.
    return EventEnvelope.message(
      id: eventIDs.next(), type: TrackingEventType.updated, occurredAt: generatedAt,
      source: "push-load",
      correlationId: nil, subject: EventSubject.tracking(order), sequence: version,
      payloadJSON: TrackingUpdated(
        userId: "u-\(order)", hub: "h1", snapshot: snapshot, changed: changed, previousStatus: stage
      ).jsonBytes)
  }

  /// `order.confirmed` of an order no app started an activity for.
  private func confirmed(_ order: String, user: String) throws -> OutgoingMessage {
    try EventEnvelope.message(
      id: "\(order)-confirmed", type: OrderEventType.confirmed, occurredAt: Date(), source: "push-load",
      correlationId: nil, subject: EventSubject.order(order), sequence: 1,
      payload: OrderConfirmed(
        orderId: order, userId: user, hub: "h1", cartVersion: 1, lines: [], totals: .zero("EUR"),
        deliverTo: GeoPoint(lat: 52.53, lng: 13.41), paymentId: "pay-\(order)", placedAt: Date()))
  }

  struct LoadError: Error, CustomStringConvertible {
    var description: String
  }

  static func seconds(_ duration: Duration) -> Double {
    Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
  }

  static func eventually(seconds: Double, _ condition: @Sendable () async -> Bool) async -> Bool {
    let deadline = ContinuousClock.now + .milliseconds(Int(seconds * 1000))
    while ContinuousClock.now < deadline {
      if await condition() { return true }
      try? await Task.sleep(for: .milliseconds(100))
    }
    return await condition()
  }

  static func bar(_ done: Int, of total: Int) -> String {
    let width = 30
    let filled = total == 0 ? width : done * width / total
    return "[" + String(repeating: "#", count: filled) + String(repeating: ".", count: width - filled) + "] "
      + "\(done * 100 / max(total, 1)) %"
  }

  /// Pushes per second (blue) and that second's p99 latency in ms (orange) over the run.
  static func chart(_ report: Report) -> String {
    let (width, height, margin) = (800.0, 300.0, 40.0)
    let points = report.timeline
    let maxPushes = Double(max(1, points.map { max($0.pushes, $0.published) }.max() ?? 1))
    let maxP99 = max(1, (points.map(\.p99).max() ?? 0) * 1000)
    func x(_ index: Int) -> Double {
      margin + (width - 2 * margin) * Double(index) / Double(max(1, points.count - 1))
    }
    func line(_ values: [Double], _ top: Double, _ colour: String) -> String {
      let coordinates = values.enumerated().map { index, value in
        String(format: "%.1f,%.1f", x(index), height - margin - (height - 2 * margin) * value / top)
      }
      return
        "<polyline fill=\"none\" stroke=\"\(colour)\" stroke-width=\"2\" points=\"\(coordinates.joined(separator: " "))\"/>"
    }
    return """
      <svg xmlns="http://www.w3.org/2000/svg" width="\(Int(width))" height="\(Int(height))" font-family="sans-serif" font-size="12">
      <rect width="100%" height="100%" fill="white"/>
      <text x="\(margin)" y="20">pushes/s (blue, max \(Int(maxPushes))) · events/s (grey) · p99 event→push ms (orange, max \(String(format: "%.1f", maxP99)))</text>
      \(line(points.map { Double($0.published) }, maxPushes, "#999"))
      \(line(points.map { Double($0.pushes) }, maxPushes, "#1f6feb"))
      \(line(points.map { $0.p99 * 1000 }, maxP99, "#e36209"))
      <line x1="\(margin)" y1="\(height - margin)" x2="\(width - margin)" y2="\(height - margin)" stroke="black"/>
      <text x="\(margin)" y="\(height - 10)">0 s</text><text x="\(width - margin - 30)" y="\(height - 10)">\(points.count) s</text>
      </svg>
      """
  }
}
