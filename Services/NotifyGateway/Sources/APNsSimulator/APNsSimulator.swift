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
/// With a `journal`, what each token received lives there and outlives the process: `flush()`
/// (every 100 ms and at shutdown, by whoever owns the simulator) appends the pushes since the last
/// flush, so a crash loses at most that much, and memory holds only those (a load test pushes to
/// tens of thousands of tokens). Without one, the record is kept in memory.
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

  /// Each token's pushes within the last second (the burst limit), forgotten for tokens idle
  /// that long once the map has doubled since the last sweep: a load test touches tens of
  /// thousands of tokens, each only now and then.
  private struct RecentPushes {
    /// By the token's fingerprint: holding tens of thousands of token strings costs megabytes.
    var times: [UInt64: [ContinuousClock.Instant]] = [:]
    var sweptAt = 1024

    mutating func forgetIdle(now: ContinuousClock.Instant) {
      guard times.count >= sweptAt * 2 else { return }
      times = times.filter { _, pushes in pushes.last.map { now - $0 <= .seconds(1) } ?? false }
      sweptAt = max(1024, times.count)
    }
  }

  public let options: Options
  private let clock: any WallClock
  private let journal: (any SimulatorJournal)?
  /// Pushes recorded since the last `flush()`, oldest first.
  private let unjournaled = Mutex<[(token: String, received: Received)]>([])
  /// Held for a whole flush, and by a reader of the journal.
  private let flushing = Mutex(())
  /// What each token (or channel) was sent, without a journal.
  private let records = Mutex<[String: [Received]]>([:])
  private let recent = Mutex(RecentPushes())
  private let unregistered = Mutex<[String: Date]>([:])
  private let random = Mutex(SplitMix64(seed: 0x5EED))
  private let counts = Mutex<[Int: Int]>([:])
  /// Broadcast channels by id, with their message storage policy.
  private let channels = Mutex<[String: Int]>([:])
  /// Channels an app may hold at once (per environment, Apple says).
  public static let maximumChannels = 10_000

  public init(options: Options, clock: any WallClock = SystemClock(), journal: (any SimulatorJournal)? = nil)
  {
    self.options = options
    self.clock = clock
    self.journal = journal
  }

  /// Takes back the channels the journal kept (nothing without one): call before serving.
  public func restore() throws {
    guard let journal else { return }
    let kept = try journal.channels()
    channels.withLock { $0 = kept }
  }

  /// Appends the pushes recorded since the last flush to the journal (nothing without one).
  public func flush() throws {
    guard let journal else { return }
    try flushing.withLock { _ in
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
    let token = Self.lowercased(request.token)
    let response = answer(request, token: token)
    let received = Received(
      receivedAt: clock.now(), status: response.status, reason: response.reason, headers: request.headers,
      body: request.payload)
    record(received, under: token)
    counts.withLock { $0[response.status, default: 0] += 1 }
    return response
  }

  /// Keeps what a token (by its lowercase hex) or a channel (`channel:<id>`) was sent: for the
  /// journal's next flush, or in memory without one.
  private func record(_ received: Received, under key: String) {
    if journal != nil {
      unjournaled.withLock { $0.append((key, received)) }
    } else {
      // Changed in place (a copy taken out would copy the token's whole record per push).
      records.withLock { records in
        records[key, default: []].append(received)
        if records[key]!.count > options.keepPerToken {
          records[key]!.removeFirst(records[key]!.count - options.keepPerToken)
        }
      }
    }
  }

  /// What was kept under `key`, oldest first: with a journal, what it holds and what waits for
  /// the next flush.
  private func recorded(under key: String) throws -> [Received] {
    guard let journal else { return records.withLock { $0[key] ?? [] } }
    // Never in the middle of a flush, so a push is seen once: on disk or still waiting.
    let (kept, waiting) = try flushing.withLock { _ in
      (
        try journal.received(by: key, keep: options.keepPerToken),
        unjournaled.withLock { $0.filter { $0.token == key } }
      )
    }
    return Array((kept + waiting.map(\.received)).suffix(options.keepPerToken))
  }

  /// `token` is the request's, lowercased once by the caller.
  private func answer(_ request: APNsRequest, token: String) -> APNsResponse {
    if let refusal = APNsRules.check(request, bundleID: options.bundleID) { return refusal }
    if let since = unregistered.withLock({ $0[token] }) {
      return APNsResponse(status: 410, reason: "Unregistered", timestamp: since, id: request.id)
    }
    let now = ContinuousClock.now
    let key = Self.fingerprint(token)
    let throttled = recent.withLock { recent -> Bool in
      recent.times[key, default: []].removeAll { now - $0 > .seconds(1) }
      let over = recent.times[key]!.count >= options.perTokenBurst
      if !over { recent.times[key]!.append(now) }
      recent.forgetIdle(now: now)
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

  // MARK: - Channels and broadcasts (iOS 18)

  /// A new channel for the app: 201 with its id (16 random bytes, base64), or APNs's 400s for
  /// another app's bundle id, a storage policy other than 0 or 1, or too many channels.
  public func createChannel(_ request: APNsChannelRequest) async throws -> APNsChannelResponse {
    guard request.bundleID == options.bundleID else {
      return APNsChannelResponse(status: 400, reason: "BadTopic")
    }
    guard request.storagePolicy == 0 || request.storagePolicy == 1 else {
      return APNsChannelResponse(status: 400, reason: "BadMessageStoragePolicy")
    }
    // Base64 as APNs's, drawn again until it has no `/` or `+`, so it can stand in a URL path.
    var id = ""
    repeat {
      let bytes = random.withLock { random in (0..<2).map { _ in random.next() } }
      id = bytes.withUnsafeBytes { Data($0).base64EncodedString() }
    } while id.contains("/") || id.contains("+")
    // Kept on disk before it is answered, as APNs keeps a channel until it is deleted.
    try channels.withLock { channels in
      guard channels.count < Self.maximumChannels else { return }
      try journal?.saveChannel(id, storagePolicy: request.storagePolicy)
      channels[id] = request.storagePolicy
    }
    guard channelIDs.contains(id) else {
      return APNsChannelResponse(status: 400, reason: "CannotCreateChannelConfig")
    }
    return APNsChannelResponse(status: 201, channelID: id)
  }

  /// Deletes a channel: 204, or 400 `BadChannelId` for one that does not exist.
  public func deleteChannel(_ id: String) throws -> APNsChannelResponse {
    let deleted = try channels.withLock { channels -> Bool in
      guard channels[id] != nil else { return false }
      try journal?.deleteChannel(id)
      channels[id] = nil
      return true
    }
    return deleted
      ? APNsChannelResponse(status: 204) : APNsChannelResponse(status: 400, reason: "BadChannelId")
  }

  /// The app's channels.
  public var channelIDs: [String] { channels.withLock { $0.keys.sorted() } }

  /// A broadcast to a channel, checked like APNs checks it (its id, priority 1, 5 or 10, a
  /// channel that exists, a payload of 1 byte to 4 KB), and recorded for the channel.
  public func broadcast(_ request: APNsBroadcastRequest) async throws -> APNsResponse {
    if options.latency > .zero { try await Task.sleep(for: options.latency) }
    let response = broadcastAnswer(request)
    let received = Received(
      receivedAt: clock.now(), status: response.status, reason: response.reason, headers: request.headers,
      body: request.payload)
    record(received, under: Self.channelKey(request.channelID))
    counts.withLock { $0[response.status, default: 0] += 1 }
    return response
  }

  private func broadcastAnswer(_ request: APNsBroadcastRequest) -> APNsResponse {
    func refuse(_ status: Int, _ reason: String) -> APNsResponse {
      APNsResponse(status: status, reason: reason, id: request.id)
    }
    guard UUID(uuidString: request.id) != nil, request.id == request.id.lowercased() else {
      return refuse(400, "BadMessageId")
    }
    guard [1, 5, 10].contains(request.priority) else { return refuse(400, "BadPriority") }
    guard request.bundleID == options.bundleID else { return refuse(400, "BadTopic") }
    guard !request.channelID.isEmpty else { return refuse(400, "MissingChannelId") }
    guard channels.withLock({ $0[request.channelID] != nil }) else { return refuse(400, "BadChannelId") }
    guard !request.payload.isEmpty else { return refuse(400, "PayloadEmpty") }
    guard request.payload.count <= APNsRules.maximumPayload else { return refuse(413, "PayloadTooLarge") }
    return APNsResponse(status: 200, id: request.id)
  }

  /// What `channel` was sent, oldest first (refusals included).
  public func broadcasts(to channel: String) throws -> [Received] {
    try recorded(under: Self.channelKey(channel))
  }

  /// `token` in lowercase, the same string when it is already (as every sender's is): a
  /// lowercased copy per push was most of what a load test's pushes kept alive.
  static func lowercased(_ token: String) -> String {
    token.utf8.contains { (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains($0) } ? token.lowercased() : token
  }

  /// A 64-bit FNV-1a fingerprint of `token`, to key per-token counts without keeping the string
  /// (two of tens of thousands of tokens share one with odds near 1 in 10^10).
  public static func fingerprint(_ token: String) -> UInt64 {
    var hash: UInt64 = 0xcbf2_9ce4_8422_2325
    for byte in token.utf8 {
      hash = (hash ^ UInt64(byte)) &* 0x0000_0100_0000_01b3
    }
    return hash
  }

  /// A channel's record beside the tokens' (a channel id is base64: it keeps its case).
  static func channelKey(_ channel: String) -> String { "channel:" + channel }

  /// What `token` received, oldest first (refusals included, with their status).
  public func received(by token: String) throws -> [Received] { try recorded(under: token.lowercased()) }

  /// Answers given, by status.
  public var answers: [Int: Int] { counts.withLock { $0 } }
}

/// Where an `APNsSimulator` keeps what each token and channel received, and its channels.
public protocol SimulatorJournal: Sendable {
  /// The app's channels, by id, with their message storage policy.
  func channels() throws -> [String: Int]
  func saveChannel(_ id: String, storagePolicy: Int) throws
  func deleteChannel(_ id: String) throws
  /// The newest `keep` pushes `token` received, oldest first.
  func received(by token: String, keep: Int) throws -> [APNsSimulator.Received]
  /// Appends `pushes` (oldest first) and keeps at most about `keep` per token.
  func append(_ pushes: [(token: String, received: APNsSimulator.Received)], keep: Int) throws
}
