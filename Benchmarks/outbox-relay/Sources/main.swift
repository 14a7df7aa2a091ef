// grocer-bench-relay: confirmed events/s of the outbox relay against RabbitMQ (issue 2).
//
// For each relay batch size: a fresh SQLite outbox is filled with N `stock.changed` events, an
// `AMQPPublisher` and an `OutboxRelay` are started, and the clock runs until the relay has
// published, confirmed and deleted every row (backlog 0). Then the same messages are published
// straight from memory with `AMQPPublisher.publish`, batch after batch (the publisher's ceiling
// without SQLite), and once more with several batches in flight at a time. Each measurement
// publishes into a fresh durable quorum queue bound to `stock.changed`, which is checked to
// hold every event and deleted afterwards.

import Foundation
import GrocerAMQP
import GrocerCore
import GrocerRabbitMQ
import GrocerRuntime
import GrocerSQLite
import GrocerStorage

/// What the command line and environment ask for.
struct Options {
  var events = 50_000
  var batchSizes = [100, 500, 1000]
  /// The batch at which relay and publisher are compared: the services' relays' own.
  var baselineBatch = OutboxRelay.defaultBatchSize
  /// Publish calls in flight at once in the baseline: by default as many batches as the relay
  /// keeps at the publisher, so the two differ by the outbox alone.
  var baselineInFlight = OutboxRelay.pipelineDepth
  var url = AMQPConfiguration.defaultURL

  static let usage = """
    usage: grocer-bench-relay [--events N] [--batches 100,500,1000] [--baseline-batch \(OutboxRelay.defaultBatchSize)]
                              [--baseline-in-flight \(OutboxRelay.pipelineDepth)]
    environment: GROCER_AMQP_URL (default \(AMQPConfiguration.defaultURL))
    """

  static func parse(_ arguments: [String], environment: [String: String]) -> Options? {
    var options = Options()
    if let url = environment["GROCER_AMQP_URL"], !url.isEmpty { options.url = url }
    var rest = arguments[...]
    func positive(_ text: String?) -> Int? {
      guard let text, let value = Int(text), value > 0 else { return nil }
      return value
    }
    while let flag = rest.popFirst() {
      switch flag {
      case "--events":
        guard let value = positive(rest.popFirst()) else { return nil }
        options.events = value
      case "--batches":
        guard let text = rest.popFirst() else { return nil }
        let sizes = text.split(separator: ",").compactMap { positive(String($0)) }
        guard !sizes.isEmpty else { return nil }
        options.batchSizes = sizes
      case "--baseline-batch":
        guard let value = positive(rest.popFirst()) else { return nil }
        options.baselineBatch = value
      case "--baseline-in-flight":
        guard let value = positive(rest.popFirst()) else { return nil }
        options.baselineInFlight = value
      default:
        return nil
      }
    }
    return options
  }
}

/// Why a measurement could not be made.
enum BenchError: Error, CustomStringConvertible {
  case brokerUnreachable(url: String, reason: String)
  case stalled(String)
  case lost(expected: Int, queued: Int, what: String)

  var description: String {
    switch self {
    case .brokerUnreachable(let url, let reason):
      "cannot reach RabbitMQ at \(url): \(reason) (start it with deploy/local/rabbitmq.sh start, or set GROCER_AMQP_URL)"
    case .stalled(let what): what
    case .lost(let expected, let queued, let what):
      "\(what): the queue holds \(queued) messages, expected \(expected): events were lost"
    }
  }
}

/// The `data` of a `stock.changed` event: what StockService publishes (`StockChanged`) plus the
/// catalogue fields a richer product feed would carry (brand, category, EAN, image), which bring
/// the message to the ~600–1,000 bytes issue 2 asks for.
struct StockChangedData: Encodable {
  struct UnitPrice: Encodable {
    var amount: Money
    var per: String
  }

  var hub: String
  var sku: String
  var name: String
  var brand: String
  var category: String
  var ean: String
  var imageURL: String
  var available: Int
  var previousAvailable: Int
  var price: Money
  var deposit: Money?
  var unitPrice: UnitPrice?
  var reason: String
}

enum Events {
  private static let products:
    [(name: String, brand: String, category: String, unit: String, size: Double, deposit: Int?)] = [
      ("Bio Vollmilch 3,8 % Fett", "Hofgut Sonnenwiese", "Milch & Molkerei/Milch", "l", 1.0, nil),
      ("Mineralwasser Classic, 6 × 1,5 l", "Quellbrunn", "Getränke/Wasser", "l", 9.0, 150),
      ("Bananen Fairtrade, lose", "Tropica", "Obst & Gemüse/Obst", "kg", 1.0, nil),
      ("Vollkorn-Toastbrot geschnitten", "Backstube Meyer", "Brot & Backwaren/Toast", "kg", 0.5, nil),
      ("Pils, Kasten 20 × 0,5 l", "Brauerei Lindenhof", "Getränke/Bier", "l", 10.0, 310),
      ("Gouda mittelalt, in Scheiben", "Käserei Altmark", "Käse/Schnittkäse", "kg", 0.15, nil),
      ("Spaghetti No. 5 aus Hartweizengrieß", "Pasta Nonna", "Vorrat/Nudeln", "kg", 0.5, nil),
      ("Orangensaft direkt gepresst", "Sonnenhain", "Getränke/Säfte", "l", 1.0, 25),
      ("Free-Range Eggs, size M, 10 pack", "Hofgut Sonnenwiese", "Eggs & Dairy/Eggs", "piece", 10, nil),
      ("Cherry-Rispentomaten", "Gärtnerei Vogt", "Obst & Gemüse/Gemüse", "kg", 0.25, nil),
    ]
  private static let reasons = [
    "reservation", "reservation", "reservation", "stockTake", "damaged", "product",
  ]

  /// `count` realistic `stock.changed` messages (random ids, fixed-seed contents).
  static func stockChanged(count: Int) throws -> [OutgoingMessage] {
    var random = SplitMix64(seed: 0x6772_6F63_6572)
    let start = Date(timeIntervalSince1970: 1_792_000_000)
    let encoder = JSON.encoder()
    var messages: [OutgoingMessage] = []
    messages.reserveCapacity(count)
    for index in 0..<count {
      let product = products[Int.random(in: 0..<products.count, using: &random)]
      let hub = "h\(Int.random(in: 1...3, using: &random))"
      let sku = String(format: "p%05d", Int.random(in: 1...3000, using: &random))
      let price = Int.random(in: 49...2999, using: &random)
      let available = Int.random(in: 0...120, using: &random)
      let data = StockChangedData(
        hub: hub, sku: sku, name: product.name, brand: product.brand, category: product.category,
        ean: String(format: "40%011d", Int.random(in: 0..<100_000_000_000, using: &random)),
        imageURL: "https://images.grocer.example/products/\(sku)/main-800x800.webp",
        available: available, previousAvailable: available + Int.random(in: 1...3, using: &random),
        price: Money(minorUnits: price),
        deposit: product.deposit.map { Money(minorUnits: $0) },
        unitPrice: StockChangedData.UnitPrice(
          amount: Money(minorUnits: Int((Double(price) / product.size).rounded())), per: product.unit),
        reason: reasons[Int.random(in: 0..<reasons.count, using: &random)])
      let envelope = EventEnvelope(
        id: UUID().uuidString.lowercased(), type: "stock.changed",
        occurredAt: start.addingTimeInterval(Double(index) / 1000), source: "stock-service",
        correlationId: UUID().uuidString.lowercased(), subject: "\(hub)/\(sku)",
        sequence: Int64.random(in: 1...500, using: &random),
        data: try JSONValue(encoding: data))
      messages.append(
        OutgoingMessage(
          messageID: envelope.id, routingKey: envelope.type, type: envelope.type,
          body: try encoder.encode(envelope), timestamp: envelope.occurredAt,
          correlationID: envelope.correlationId))
    }
    return messages
  }
}

/// One measured run.
struct Measurement {
  var events: Int
  var elapsed: Duration
  /// CPU seconds this process and the broker (beam.smp) used meanwhile.
  var cpu = (own: 0.0, broker: 0.0)

  var seconds: Double {
    let (whole, attoseconds) = elapsed.components
    return Double(whole) + Double(attoseconds) / 1e18
  }

  var perSecond: Double { Double(events) / max(seconds, 1e-9) }

  func line(_ label: String, _ parameters: String) -> String {
    "\(label) \(parameters) events=\(events) seconds=\(String(format: "%.2f", seconds)) "
      + "confirmed_per_s=\(Int(perSecond.rounded())) "
      + String(
        format: "cpu_us_per_event=%.1f broker_cpu_us_per_event=%.1f", cpu.own * 1e6 / Double(events),
        cpu.broker * 1e6 / Double(events))
  }
}

/// The local broker's process (RabbitMQ's Erlang VM), if one runs here.
let brokerPID: String? = (try? FileManager.default.contentsOfDirectory(atPath: "/proc"))?.first { entry in
  entry.allSatisfy(\.isNumber)
    && (try? String(contentsOfFile: "/proc/\(entry)/comm", encoding: .utf8))?.hasPrefix("beam.smp") == true
}

/// CPU this process and the broker have used since the mark was made.
struct CPUMark {
  let own = ProcessUsage.cpuSeconds("self")
  let broker = brokerPID.map(ProcessUsage.cpuSeconds) ?? 0

  var used: (own: Double, broker: Double) {
    (ProcessUsage.cpuSeconds("self") - own, (brokerPID.map(ProcessUsage.cpuSeconds) ?? 0) - broker)
  }
}

/// Runs `body` and adds the CPU this process and the broker used meanwhile to its measurement
/// (all of it is timed: the publisher's run).
func withCPU(_ body: () async throws -> Measurement) async rethrows -> Measurement {
  let mark = CPUMark()
  var measurement = try await body()
  measurement.cpu = mark.used
  return measurement
}

/// The broker side of the benchmark: one durable quorum queue bound to `stock.changed`,
/// declared fresh before each measurement and deleted after it.
struct BenchQueue {
  let configuration: AMQPConfiguration
  let spec: QueueSpec
  let logger: Logger

  var names: [String] { [spec.name, spec.parkingQueueName] }

  /// Declares the queue (and its bindings) by starting a consumer and shutting it down at once.
  func declare() async throws {
    let consumer = AMQPConsumer(
      configuration: configuration.named("grocer-bench-relay-declare"), queue: spec, prefetch: 1,
      logger: logger, metrics: MetricsRegistry(), handler: { _ in .retry })
    try await consumer.start()
    let connected = await consumer.waitUntilConnected(timeout: .seconds(10))
    await consumer.shutdown()
    guard connected else {
      throw BenchError.brokerUnreachable(
        url: redacted(configuration.url), reason: "cannot declare \(spec.name)")
    }
  }

  /// Checks the queue holds at least `expected` messages, then deletes it.
  func verifyAndDelete(expected: Int, what: String) async throws -> Int {
    let queued = try await AMQPAdmin.messageCount(configuration: configuration, queue: spec.name)
    try await AMQPAdmin.deleteQueues(configuration: configuration, names)
    guard queued >= expected else { throw BenchError.lost(expected: expected, queued: queued, what: what) }
    return queued
  }
}

/// Writes one result line to standard output at once (no buffering when piped to `run.sh`).
func emit(_ line: String) {
  FileHandle.standardOutput.write(Data((line + "\n").utf8))
}

/// The URL without its password, for messages.
func redacted(_ url: String) -> String {
  guard var components = URLComponents(string: url), components.password != nil else { return url }
  components.password = "***"
  return components.string ?? url
}

/// Starts a publisher and waits for its connection.
func connectedPublisher(_ configuration: AMQPConfiguration, logger: Logger, metrics: MetricsRegistry)
  async throws -> AMQPPublisher
{
  let publisher = AMQPPublisher(
    configuration: configuration.named("grocer-bench-relay"), logger: logger, metrics: metrics)
  try await publisher.start()
  guard await publisher.waitUntilConnected(timeout: .seconds(10)) else {
    await publisher.shutdown()
    throw BenchError.brokerUnreachable(url: redacted(configuration.url), reason: "publisher did not connect")
  }
  return publisher
}

/// Fills a fresh outbox, lets an `OutboxRelay` drain it and times that.
func measureRelay(
  batchSize: Int, messages: [OutgoingMessage], configuration: AMQPConfiguration, logger: Logger
) async throws -> Measurement {
  let folder = FileManager.default.temporaryDirectory
    .appendingPathComponent("grocer-bench-relay-\(UUID().uuidString.prefix(8))").path
  defer { try? FileManager.default.removeItem(atPath: folder) }
  let database = try SQLiteDatabase(path: folder + "/outbox.sqlite", migrations: [], logger: logger)
  defer { database.close() }
  let chunk = 5_000
  for start in stride(from: 0, to: messages.count, by: chunk) {
    try database.write { db in
      for message in messages[start..<min(start + chunk, messages.count)] {
        try Outbox.append(message, in: db)
      }
    }
  }

  let metrics = MetricsRegistry()
  let publisher = try await connectedPublisher(configuration, logger: logger, metrics: metrics)
  let relay = OutboxRelay(
    database: database, publisher: publisher, batchSize: batchSize, logger: logger, metrics: metrics)
  // The relay counts a batch once it is confirmed and deleted, so this reaches the event count
  // exactly when the backlog reaches 0 (checked below).
  let published = metrics.counter("outbox_published_total", help: "")
  let failures = metrics.counter("outbox_publish_failures_total", help: "")
  let limit = Duration.seconds(60) + .milliseconds(messages.count)  // far beyond 1,000/s

  let mark = CPUMark()
  let start = ContinuousClock.now
  try await relay.start()
  while published.value < messages.count && ContinuousClock.now - start < limit {
    try await Task.sleep(for: .milliseconds(1))
  }
  let elapsed = ContinuousClock.now - start
  let cpu = mark.used
  await relay.shutdown()
  await publisher.shutdown()

  let backlog = try database.read { try Outbox.backlog(in: $0) }
  guard backlog == 0 else {
    throw BenchError.stalled(
      "relay batch=\(batchSize): \(backlog) rows still in the outbox after \(limit) "
        + "(\(failures.value) failed publishes; see the warnings above)")
  }
  if failures.value > 0 {
    logger.warning("relay batch=\(batchSize): \(failures.value) publishes failed and were retried")
  }
  return Measurement(events: messages.count, elapsed: elapsed, cpu: cpu)
}

/// Publishes the messages straight from memory, `batchSize` per `publish` call, with at most
/// `inFlight` calls waiting for their confirms at once.
func measurePublisher(
  batchSize: Int, inFlight: Int, messages: [OutgoingMessage], configuration: AMQPConfiguration,
  logger: Logger
) async throws -> Measurement {
  let publisher = try await connectedPublisher(configuration, logger: logger, metrics: MetricsRegistry())
  let batches = stride(from: 0, to: messages.count, by: batchSize).map {
    Array(messages[$0..<min($0 + batchSize, messages.count)])
  }
  let start = ContinuousClock.now
  do {
    try await withThrowingTaskGroup(of: Void.self) { group in
      var next = 0
      var running = 0
      while next < batches.count || running > 0 {
        while next < batches.count && running < inFlight {
          let batch = batches[next]
          group.addTask { try await publisher.publish(batch) }
          next += 1
          running += 1
        }
        try await group.next()
        running -= 1
      }
    }
  } catch {
    await publisher.shutdown()
    throw error
  }
  let elapsed = ContinuousClock.now - start
  await publisher.shutdown()
  return Measurement(events: messages.count, elapsed: elapsed)
}

/// Runs every measurement; returns the process exit status.
func runBenchmark(_ options: Options) async -> Int32 {
  let logger = Logger(label: "grocer-bench-relay", level: .warning)
  let configuration = AMQPConfiguration(
    url: options.url, connectionName: "grocer-bench-relay", connectTimeout: .seconds(3))
  let queue = BenchQueue(
    configuration: configuration,
    spec: QueueSpec(
      name: "bench.relay.\(UUID().uuidString.prefix(8).lowercased())", bindingKeys: ["stock.changed"]),
    logger: logger)
  do {
    // A plain connection first: fails fast and clearly when the broker is not there.
    do {
      try await AMQPAdmin.deleteQueues(configuration: configuration, queue.names)
    } catch {
      throw BenchError.brokerUnreachable(url: redacted(options.url), reason: "\(error)")
    }
    let messages = try Events.stockChanged(count: options.events)
    let meanBytes = messages.reduce(0) { $0 + $1.body.count } / max(1, messages.count)
    emit(
      "outbox-relay: events=\(options.events) body_bytes=\(meanBytes) queue=\(queue.spec.name) (quorum, "
        + "bound to stock.changed) broker=\(redacted(options.url)) cores=\(ProcessInfo.processInfo.activeProcessorCount)"
    )

    // Warm-up (not measured): the first queue and connection of a run are slower.
    try await queue.declare()
    _ = try await measurePublisher(
      batchSize: 500, inFlight: 1, messages: Array(messages.prefix(2_000)), configuration: configuration,
      logger: logger)
    try await AMQPAdmin.deleteQueues(configuration: configuration, queue.names)

    var relayResults: [Int: Measurement] = [:]
    for batchSize in options.batchSizes {
      try await queue.declare()
      let result = try await measureRelay(
        batchSize: batchSize, messages: messages, configuration: configuration, logger: logger)
      _ = try await queue.verifyAndDelete(expected: messages.count, what: "relay batch=\(batchSize)")
      relayResults[batchSize] = result
      emit(result.line("relay", "batch=\(batchSize)"))
    }

    // The yardstick, alternating with the relay at its batch twice (the better of each pair
    // counts: this machine's noise swings single runs by a tenth or more).
    var relays: [Measurement] = relayResults[options.baselineBatch].map { [$0] } ?? []
    var baselines: [Measurement] = []
    let label = "batch=\(options.baselineBatch) in_flight=\(options.baselineInFlight)"
    for round in 0..<2 {
      try await queue.declare()
      let baseline = try await withCPU {
        try await measurePublisher(
          batchSize: options.baselineBatch, inFlight: options.baselineInFlight, messages: messages,
          configuration: configuration, logger: logger)
      }
      _ = try await queue.verifyAndDelete(expected: messages.count, what: "baseline")
      baselines.append(baseline)
      emit(baseline.line("baseline", label))
      if round == 0 {
        try await queue.declare()
        let relay = try await measureRelay(
          batchSize: options.baselineBatch, messages: messages, configuration: configuration, logger: logger)
        _ = try await queue.verifyAndDelete(
          expected: messages.count, what: "relay batch=\(options.baselineBatch)")
        relays.append(relay)
        emit(relay.line("relay", "batch=\(options.baselineBatch) again"))
      }
    }
    let relay = relays.map(\.perSecond).max() ?? 0
    let baseline = baselines.map(\.perSecond).max() ?? 0
    emit(
      "ratio relay/baseline \(label) relay_per_s=\(Int(relay)) baseline_per_s=\(Int(baseline)) ratio="
        + String(format: "%.2f", relay / max(baseline, 1)))
    return 0
  } catch {
    try? await AMQPAdmin.deleteQueues(configuration: configuration, queue.names)
    FileHandle.standardError.write(Data("grocer-bench-relay: \(error)\n".utf8))
    if case BenchError.brokerUnreachable = error { return 2 }
    return 1
  }
}

guard
  let options = Options.parse(
    Array(CommandLine.arguments.dropFirst()), environment: ProcessInfo.processInfo.environment)
else {
  FileHandle.standardError.write(Data((Options.usage + "\n").utf8))
  exit(64)
}
exit(await runBenchmark(options))
