import Foundation
import GrocerAMQP
import GrocerContracts
import GrocerCore
import GrocerHTTP
import GrocerHTTPServer
import GrocerRabbitMQ
import GrocerRuntime
import NotifyGateway
import Synchronization

/// The push load tool (`grocer load push`): a NotifyGateway in this process, with its APNs
/// simulator, fed through the real broker. It registers N Live Activities
/// (`liveActivity.token`), then publishes `tracking.updated` for them at a fixed rate for a
/// while — mostly ETA drifts (priority 5), every fourth a stage change (priority 10, on the
/// budget), every tenth a rider-only move (no push) — and reports what came out of the
/// simulator: pushes per second, event-to-push latency percentiles, downgrades, coalesced and
/// dropped updates, APNs answers by reason, memory; as text and as an SVG chart over time.
/// With `starts`, as many orders are confirmed over the run without an activity token, each to a
/// device with a push-to-start token: their start pushes (and confirmation alerts) mix in.
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
    public var peakMemoryMB = 0.0
    public var timeline: [Second] = []

    public func percentile(_ p: Double) -> Double {
      guard !latencies.isEmpty else { return 0 }
      let sorted = latencies.sorted()
      return sorted[min(sorted.count - 1, Int((Double(sorted.count) * p).rounded(.up)) - 1)]
    }

    public var description: String {
      func ms(_ seconds: Double) -> String { String(format: "%.1f ms", seconds * 1000) }
      return """
        push load: \(options.orders) activities, \(options.rate) tracking.updated/s for \(options.seconds) s, \(options.starts) started by push
          events published     \(published)
          pushes delivered     \(pushes) (\(String(format: "%.0f", Double(pushes) / max(seconds, 0.001))) /s over \(String(format: "%.1f", seconds)) s)
          event → push         p50 \(ms(percentile(0.5)))  p95 \(ms(percentile(0.95)))  p99 \(ms(percentile(0.99)))  max \(ms(latencies.max() ?? 0))
          downgraded to p5     \(downgrades)
          coalesced            \(coalesced)
          dropped              \(dropped)
          APNs answers         \(answers.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(separator: ", "))
          start pushes         \(startsDelivered) of \(options.starts)
          peak memory          \(String(format: "%.0f", peakMemoryMB)) MB
        """
    }
  }

  private let options: Options
  private let logger: Logger

  public init(options: Options, logger: Logger) {
    self.options = options
    self.logger = logger
  }

  public func run(progress: @escaping @Sendable (String) -> Void = { _ in }) async throws -> Report {
    let unique = String(UUID().uuidString.prefix(8)).lowercased()
    var configuration = NotifyGatewayConfiguration(settings: options.settings)
    configuration.serviceName = "push-load-\(unique)"
    configuration.dataDirectory = NSTemporaryDirectory() + "grocer-push-load-\(unique)"
    configuration.hourlyBudget = options.hourlyBudget
    configuration.queueExpiry = 600
    configuration.simulatorBurst = 1000
    configuration.liveActivityStartAfter = 1
    defer { try? FileManager.default.removeItem(atPath: configuration.dataDirectory) }

    let seen = Observations()
    let metrics = MetricsRegistry()
    let app = try buildNotifyGateway(
      configuration: configuration, logger: logger, metrics: metrics,
      onDelivered: { push in
        let now = ContinuousClock.now
        if let sent = seen.publishedAt.withLock({ $0.removeValue(forKey: "\(push.orderId)-v\(push.version)") }
        ) {
          seen.samples.withLock { $0.append(Self.seconds(now - sent)) }
        }
        seen.lastPush.withLock { $0 = now }
      })
    for service in app.services where !(service is HTTPServer) { try await service.start() }
    let publisher = AMQPPublisher(
      configuration: AMQPConfiguration(
        settings: options.settings, connectionName: "\(configuration.serviceName)-load"),
      logger: logger, metrics: metrics)
    try await publisher.start()
    // The run's queue goes when it ends: one left bound would take a copy of every later run's
    // events (and tie up the broker writing them).
    let amqp = AMQPConfiguration(
      settings: options.settings, connectionName: "\(configuration.serviceName)-admin")
    do {
      let report = try await measure(
        app: app, publisher: publisher, configuration: configuration, unique: unique, metrics: metrics,
        seen: seen, progress: progress)
      await stop(app: app, publisher: publisher, amqp: amqp, queue: configuration.serviceName)
      return report
    } catch {
      await stop(app: app, publisher: publisher, amqp: amqp, queue: configuration.serviceName)
      throw error
    }
  }

  private func stop(app: NotifyGatewayApp, publisher: AMQPPublisher, amqp: AMQPConfiguration, queue: String)
    async
  {
    await publisher.shutdown()
    for service in app.services.reversed() where !(service is HTTPServer) { await service.shutdown() }
    try? await AMQPAdmin.deleteQueues(configuration: amqp, [queue, queue + ".parking"])
  }

  private func measure(
    app: NotifyGatewayApp, publisher: AMQPPublisher, configuration: NotifyGatewayConfiguration,
    unique: String, metrics: MetricsRegistry, seen: Observations,
    progress: @escaping @Sendable (String) -> Void
  ) async throws -> Report {
    guard await publisher.waitUntilConnected(timeout: .seconds(15)) else {
      throw LoadError(description: "the broker is not reachable (GROCER_AMQP_URL)")
    }

    // The activities.
    let orders = (0..<options.orders).map { "load-\(unique)-\($0)" }
    let now = Date()
    for chunk in stride(from: 0, to: orders.count, by: 500) {
      let messages = try orders[chunk..<min(chunk + 500, orders.count)].enumerated().map { offset, order in
        try EventEnvelope(
          id: "\(order)-token", type: TrackingEventType.liveActivityToken, occurredAt: now,
          source: "push-load",
          correlationId: nil, subject: EventSubject.liveActivity(order), sequence: 1,
          payload: LiveActivityToken(
            orderId: order, userId: "u-\(order)", hub: "h1",
            token: String(format: "%016x", chunk + offset) + String(repeating: "ab", count: 72))
        ).message()
      }
      try await publisher.publish(messages)
    }
    progress("registering \(orders.count) Live Activities…")
    let store = app.store
    let registered = await Self.eventually(seconds: 60) {
      (try? store.database.read {
        try $0.queryOne("SELECT count(*) FROM activities WHERE token IS NOT NULL")?.int(0)
      })
        == orders.count
    }
    guard registered else { throw LoadError(description: "the activities did not all arrive within 60 s") }
    // The devices whose orders the gateway starts by push: one start token each.
    let startOrders = (0..<options.starts).map { "load-\(unique)-start-\($0)" }
    let startTokens = startOrders.indices.map {
      String(format: "5%015x", $0) + String(repeating: "cd", count: 40)
    }
    try await app.store.database.onWriterQueue {
      for (index, token) in startTokens.enumerated() {
        let device = String(format: "%016x", index) + String(repeating: "ef", count: 24)
        try app.commands.registerDevice(device, user: "su-\(unique)-\(index)")
        try app.commands.setStartToken(token, device: device, user: "su-\(unique)-\(index)")
      }
    }

    // The timed run: a tick every 10 ms publishes what is due by then (open loop).
    var report = Report(options: options)
    var versions = [Int64](repeating: 0, count: orders.count)
    var next = 0
    var published = 0
    let start = ContinuousClock.now
    let total = options.rate * options.seconds
    var lastSecond = 0
    var lastPushes = 0
    var lastPublished = 0
    var lastSamples = 0
    var startsSent = 0
    while published < total {
      let elapsed = Self.seconds(ContinuousClock.now - start)
      let due = min(total, Int(elapsed * Double(options.rate)))
      var batch: [OutgoingMessage] = []
      while published < due {
        let index = next % orders.count
        next += 1
        versions[index] += 1
        batch.append(update(orders[index], version: versions[index], base: now))
        published += 1
        // The starts spread evenly over the run.
        while startsSent < startOrders.count && startsSent * total <= published * startOrders.count {
          batch.append(try confirmed(startOrders[startsSent], user: "su-\(unique)-\(startsSent)"))
          startsSent += 1
        }
      }
      if !batch.isEmpty {
        let sentAt = ContinuousClock.now
        seen.publishedAt.withLock { table in for message in batch { table[message.messageID] = sentAt } }
        try await publisher.publish(batch)
      }
      let second = Int(elapsed)
      if second > lastSecond {
        let pushes = app.simulator?.answers[200] ?? 0
        let all = seen.samples.withLock { $0 }
        let window = Array(all[lastSamples...]).sorted()
        report.timeline.append(
          Second(
            published: published - lastPublished, pushes: pushes - lastPushes,
            p99: window.isEmpty ? 0 : window[min(window.count - 1, Int(Double(window.count) * 0.99))]))
        (lastPushes, lastPublished, lastSamples, lastSecond) = (pushes, published, all.count, second)
        report.peakMemoryMB = max(report.peakMemoryMB, Self.residentMB())
        progress(Self.bar(published, of: total) + " \(report.timeline.last!.pushes) pushes/s")
      }
      try await Task.sleep(for: .milliseconds(10))
    }
    // Drain: everything published is consumed and handled.
    let expected = published + orders.count + startsSent
    let consumed = Self.counter(
      metrics, "events_consumed_total", labels: [("queue", configuration.serviceName)])
    _ = await Self.eventually(seconds: 30) {
      (try? store.pendingCount()) == 0 && consumed.value >= expected
        && (try? store.database.read { try $0.queryOne("SELECT count(*) FROM starts")?.int(0) }) == 0
    }
    report.startsDelivered = startTokens.reduce(0) { total, token in
      total + ((try? app.simulator?.received(by: token)) ?? []).filter { $0.status == 200 }.count
    }
    // Until the last push was answered (not the drain's polling after it).
    report.seconds = Self.seconds(seen.lastPush.withLock { $0 } - start)
    report.published = published
    report.latencies = seen.samples.withLock { $0 }
    report.pushes = app.simulator?.answers[200] ?? 0
    report.downgrades = Self.counter(metrics, "push_downgrades_total").value
    report.coalesced = Self.counter(metrics, "push_coalesced_total").value
    report.dropped = Self.counter(metrics, "push_dropped_total").value
    report.answers = Dictionary(
      uniqueKeysWithValues: (app.simulator?.answers ?? [:]).map { (String($0.key), $0.value) })
    report.peakMemoryMB = max(report.peakMemoryMB, Self.residentMB())
    if let path = options.chartPath {
      try Self.chart(report).write(toFile: path, atomically: true, encoding: .utf8)
    }
    return report
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
      id: "\(order)-v\(version)", type: TrackingEventType.updated, occurredAt: generatedAt,
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

  /// What the gateway tells the tool as pushes are answered.
  final class Observations: Sendable {
    /// Seconds from publishing to APNs's answer, one per delivered push.
    let samples = Mutex<[Double]>([])
    let lastPush = Mutex(ContinuousClock.now)
    /// When each (order, version) was published: latency is measured from there, exactly.
    let publishedAt = Mutex<[String: ContinuousClock.Instant]>([:])
  }

  struct LoadError: Error, CustomStringConvertible {
    var description: String
  }

  static func seconds(_ duration: Duration) -> Double {
    Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
  }

  static func eventually(seconds: Double, _ condition: @Sendable () -> Bool) async -> Bool {
    let deadline = ContinuousClock.now + .milliseconds(Int(seconds * 1000))
    while ContinuousClock.now < deadline {
      if condition() { return true }
      try? await Task.sleep(for: .milliseconds(50))
    }
    return condition()
  }

  /// The gateway's counter `name` (the registry answers the instrument it registered).
  static func counter(_ metrics: MetricsRegistry, _ name: String, labels: [(String, String)] = []) -> Counter
  {
    metrics.counter(name, help: "", labels: labels)
  }

  static func residentMB() -> Double {
    guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8),
      let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmRSS:") })
    else { return 0 }
    let kilobytes = Double(line.split(separator: " ").dropFirst().first ?? "0") ?? 0
    return kilobytes / 1024
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
