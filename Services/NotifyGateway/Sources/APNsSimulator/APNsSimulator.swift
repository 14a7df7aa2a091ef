import Foundation
import GrocerCore
import Synchronization

/// A stand-in for APNs that enforces its rules and records what each device or activity would
/// have received. Part of the product: load tests push into it, and `GET /v1/sim/devices/{token}`
/// shows its record.
///
/// - Every request is checked like APNs checks it (`APNsRules`): headers, topic and its Live
///   Activity suffix, token format, payload size.
/// - Tokens marked unregistered answer 410 `Unregistered` with a timestamp.
/// - One token pushed more than `perTokenBurst` times within a second answers 429
///   `TooManyRequests`.
/// - `failureRate` of the requests answer 503 `ServiceUnavailable`; every answer takes `latency`.
///
/// With a `journal`, what each token received outlives the process: the record starts from it,
/// and `flush()` (every 100 ms and at shutdown, by whoever owns the simulator) appends the pushes
/// since the last flush, so a crash loses at most that much.
public final class APNsSimulator: APNsTransport {
  public struct Options: Sendable {
    public var bundleID: String
    public var perTokenBurst = 20
    public var failureRate = 0.0
    public var latency: Duration = .zero
    /// Pushes kept per token (the oldest go first).
    public var keepPerToken = 200

    public init(bundleID: String) { self.bundleID = bundleID }
  }

  /// One push as the device would have seen it (or the refusal).
  public struct Received: Sendable, Hashable, Encodable {
    public var receivedAt: Date
    public var status: Int
    public var reason: String?
    public var headers: [String: String]
    /// The body as sent; read only when someone looks (a load test pushes thousands a second).
    var body: [UInt8]

    public init(receivedAt: Date, status: Int, reason: String?, headers: [String: String], body: [UInt8]) {
      self.receivedAt = receivedAt
      self.status = status
      self.reason = reason
      self.headers = headers
      self.body = body
    }

    /// The body as sent.
    public var bodyBytes: [UInt8] { body }

    /// The body as JSON (`null` if it was not JSON).
    public var payload: JSONValue { (try? JSON.decode(JSONValue.self, from: Data(body))) ?? .null }

    private enum CodingKeys: String, CodingKey { case receivedAt, status, reason, headers, payload }

    public func encode(to encoder: any Encoder) throws {
      var container = encoder.container(keyedBy: CodingKeys.self)
      try container.encode(receivedAt, forKey: .receivedAt)
      try container.encode(status, forKey: .status)
      try container.encodeIfPresent(reason, forKey: .reason)
      try container.encode(headers, forKey: .headers)
      try container.encode(payload, forKey: .payload)
    }
  }

  private struct TokenRecord {
    var pushes: [Received] = []
    var recent: [ContinuousClock.Instant] = []
  }

  public let options: Options
  private let clock: any WallClock
  private let journal: (any SimulatorJournal)?
  /// Pushes recorded since the last `flush()`, oldest first.
  private let unjournaled = Mutex<[(token: String, received: Received)]>([])
  private let records = Mutex<[String: TokenRecord]>([:])
  private let unregistered = Mutex<[String: Date]>([:])
  private let random = Mutex(SplitMix64(seed: 0x5EED))
  private let counts = Mutex<[Int: Int]>([:])

  /// With a `journal`, call `restore()` before the first push.
  public init(options: Options, clock: any WallClock = SystemClock(), journal: (any SimulatorJournal)? = nil)
  {
    self.options = options
    self.clock = clock
    self.journal = journal
  }

  /// Starts the record from what the journal kept (nothing without one).
  public func restore() throws {
    guard let journal else { return }
    let kept = try journal.load()
    let keep = options.keepPerToken
    records.withLock { records in
      for (token, pushes) in kept { records[token] = TokenRecord(pushes: Array(pushes.suffix(keep))) }
    }
  }

  /// Appends the pushes recorded since the last flush to the journal (nothing without one).
  public func flush() throws {
    guard let journal else { return }
    let pending = unjournaled.withLock { pending in
      defer { pending.removeAll(keepingCapacity: true) }
      return pending
    }
    guard !pending.isEmpty else { return }
    do {
      try journal.append(pending, keep: options.keepPerToken)
    } catch {
      // Kept for the next flush, before what came meanwhile.
      unjournaled.withLock { $0.insert(contentsOf: pending, at: 0) }
      throw error
    }
  }

  /// From now on `token` answers 410 Unregistered (the app was deleted); returns since when
  /// (the first time asked).
  @discardableResult
  public func unregister(_ token: String) -> Date {
    let now = clock.now()
    return unregistered.withLock { unregistered in
      let since = unregistered[token.lowercased()] ?? now
      unregistered[token.lowercased()] = since
      return since
    }
  }

  public func send(_ request: APNsRequest) async throws -> APNsResponse {
    if options.latency > .zero { try await Task.sleep(for: options.latency) }
    let response = answer(request)
    let token = request.token.lowercased()
    let received = Received(
      receivedAt: clock.now(), status: response.status, reason: response.reason, headers: request.headers,
      body: request.payload)
    records.withLock { records in
      var record = records[token] ?? TokenRecord()
      record.pushes.append(received)
      if record.pushes.count > options.keepPerToken {
        record.pushes.removeFirst(record.pushes.count - options.keepPerToken)
      }
      records[token] = record
    }
    if journal != nil { unjournaled.withLock { $0.append((token, received)) } }
    counts.withLock { $0[response.status, default: 0] += 1 }
    return response
  }

  private func answer(_ request: APNsRequest) -> APNsResponse {
    if let refusal = APNsRules.check(request, bundleID: options.bundleID) { return refusal }
    let token = request.token.lowercased()
    if let since = unregistered.withLock({ $0[token] }) {
      return APNsResponse(status: 410, reason: "Unregistered", timestamp: since, id: request.id)
    }
    let now = ContinuousClock.now
    let throttled = records.withLock { records -> Bool in
      var record = records[token] ?? TokenRecord()
      record.recent.removeAll { now - $0 > .seconds(1) }
      let over = record.recent.count >= options.perTokenBurst
      if !over { record.recent.append(now) }
      records[token] = record
      return over
    }
    if throttled { return APNsResponse(status: 429, reason: "TooManyRequests", id: request.id) }
    if options.failureRate > 0 {
      let roll = random.withLock { Double($0.next() % 1_000_000) / 1_000_000 }
      if roll < options.failureRate {
        return APNsResponse(status: 503, reason: "ServiceUnavailable", id: request.id)
      }
    }
    return APNsResponse(status: 200, id: request.id)
  }

  /// What `token` received, oldest first (refusals included, with their status).
  public func received(by token: String) -> [Received] {
    records.withLock { $0[token.lowercased()]?.pushes ?? [] }
  }

  /// Answers given, by status.
  public var answers: [Int: Int] { counts.withLock { $0 } }
}

/// Where an `APNsSimulator` keeps what each token received beyond its memory.
public protocol SimulatorJournal: Sendable {
  /// Every token's kept pushes, oldest first.
  func load() throws -> [String: [APNsSimulator.Received]]
  /// Appends `pushes` (oldest first) and keeps at most about `keep` per token.
  func append(_ pushes: [(token: String, received: APNsSimulator.Received)], keep: Int) throws
}
