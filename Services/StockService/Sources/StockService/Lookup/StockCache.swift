import Foundation
import GrocerContracts
import GrocerCore
import GrocerFastPath
import Synchronization

/// The in-memory cache of stock counts that answers `GET /v1/hubs/{hub}/stock`, the hot path.
///
/// Rules (SPEC.md, StockService):
/// - an entry is fresh for `timeToLive` (30 s) after it was read from the database; older is a
///   miss, so each entry is refreshed at most once per `timeToLive` by the reads that need it;
/// - `invalidate` (from a `stock.changed` event) drops an entry at once and remembers the event's
///   sequence (the product's version): a `fill` that read an older version from the database
///   while the event was racing it is ignored, so a stale count never comes back;
/// - a SKU the database does not know is cached as unknown (left out of replies) so it is not
///   looked up on every request;
/// - `removeAll` (after a broker reconnect, when events may have been missed) empties the cache
///   and bumps `generation`; a fill that began before it (it passes the generation its lookup
///   saw) is dropped.
///
/// Hubs are spread over 16 lock shards, and one lookup takes one lock once: a 20-id lookup is
/// 21 dictionary probes under a `Mutex` and two array allocations (the entries and, only on a
/// miss, the miss list). Times are compared as `Double`s; no `Date()` is made inside.
public final class StockCache: Sendable {
  public let timeToLive: TimeInterval

  private let shards: [Shard]
  /// `shards`, for the remembered-reply path (kept alive by `shards`).
  private let unretainedShards: [Unretained<Shard>]
  private let generationCounter = Atomic<UInt64>(0)

  public init(timeToLive: TimeInterval = 30, shardCount: Int = 16) {
    self.timeToLive = timeToLive
    shards = (0..<max(1, shardCount)).map { _ in Shard() }
    unretainedShards = shards.map(Unretained.init)
  }

  /// Bumped by `removeAll`; pass the value a lookup returned to `fill`.
  public var generation: UInt64 { generationCounter.load(ordering: .acquiring) }

  /// Looks up `skus` (already parsed and de-duplicated) of `hub` at `now`.
  public func lookup(hub: HubID, skus: [SKU], now: Date) -> StockLookup {
    let nowSeconds = now.timeIntervalSinceReferenceDate
    let ttl = timeToLive
    var lookup = StockLookup(generation: generation, capacity: skus.count)
    let shard = shard(for: hub)
    shard.slots.withLock { hubs in
      lookup.epoch = shard.epoch.load(ordering: .acquiring)
      guard let slots = hubs[hub] else {
        lookup.addMisses(skus)
        return
      }
      for sku in skus {
        let found = slots[sku]
        guard let slot = found, slot.count != Slot.invalidated, nowSeconds - slot.readAt < ttl else {
          lookup.addMiss(sku)
          if let found, found.count != Slot.invalidated { lookup.metAgedOut = true }
          continue
        }
        lookup.add(count: slot.count, readAt: slot.readAt)
      }
    }
    return lookup
  }

  /// Up to `limit` SKUs of `hub` whose counts have aged out at `now` (not those dropped by an
  /// event, nor SKUs never read): a miss reads them along with its own. Entries filled together
  /// expire together, and without this each request that meets them then reads its own few
  /// from the database; with it the first one refreshes them all in one read, and each is still
  /// read at most once per `timeToLive`.
  public func expired(hub: HubID, now: Date, limit: Int) -> [SKU] {
    let nowSeconds = now.timeIntervalSinceReferenceDate
    let ttl = timeToLive
    return shard(for: hub).slots.withLock { hubs in
      var found: [SKU] = []
      for (sku, slot) in hubs[hub] ?? [:]
      where slot.count != Slot.invalidated && nowSeconds - slot.readAt >= ttl {
        found.append(sku)
        if found.count >= limit { break }
      }
      return found
    }
  }

  /// Stores what the database answered for missed SKUs, all read at `readAt` (take it just
  /// before the query). A row whose `sequence` is below the one an entry already has (a newer
  /// read or an invalidation) is ignored; so is the whole fill if `removeAll` ran since the
  /// lookup that returned `generation`.
  ///
  /// Rows are stored `fillChunk` at a time, each chunk under the lock once: a refresh of a whole
  /// hub (thousands of rows) would otherwise hold every lookup of the hub's shard until it ends.
  public func fill(hub: HubID, rows: [StockRow], readAt: Date, generation: UInt64) {
    var start = rows.startIndex
    while start < rows.endIndex {
      let end = min(start + Self.fillChunk, rows.endIndex)
      fill(
        hub: hub, rows: rows[start..<end], readSeconds: readAt.timeIntervalSinceReferenceDate,
        generation: generation)
      start = end
    }
  }

  static let fillChunk = 256

  private func fill(hub: HubID, rows: ArraySlice<StockRow>, readSeconds: Double, generation: UInt64) {
    let shard = shard(for: hub)
    shard.slots.withLock { hubs in
      guard generationCounter.load(ordering: .acquiring) == generation else { return }
      var changed = false
      for row in rows {
        if let existing = hubs[hub]?[row.sku], existing.sequence > row.sequence { continue }
        let count = row.count.map { max(0, $0) } ?? Slot.unknown
        if let existing = hubs[hub]?[row.sku], existing.count >= 0, existing.count != count { changed = true }
        hubs[hub, default: [:]][row.sku] = Slot(count: count, readAt: readSeconds, sequence: row.sequence)
      }
      if (hubs[hub]?.count ?? 0) > Self.maximumEntriesPerHub {
        // Ids come from clients: past the bound the hub starts cold, and fills begun before
        // this are fenced off as after `removeAll`.
        hubs[hub] = nil
        generationCounter.add(1, ordering: .acquiringAndReleasing)
        changed = true
      }
      // A remembered reply must not show a count older than one the cache now holds.
      if changed { shard.epoch.add(1, ordering: .acquiringAndReleasing) }
    }
  }

  /// Drops `hub`/`sku` because version `sequence` changed it. An event older than what the
  /// cache holds is ignored.
  public func invalidate(hub: HubID, sku: SKU, sequence: Int64) {
    let shard = shard(for: hub)
    shard.slots.withLock { hubs in
      if let existing = hubs[hub]?[sku], existing.sequence > sequence { return }
      hubs[hub, default: [:]][sku] = Slot(count: Slot.invalidated, readAt: -.infinity, sequence: sequence)
      // Every reply remembered for this shard's hubs may hold the old count.
      shard.epoch.add(1, ordering: .acquiringAndReleasing)
    }
  }

  // MARK: Whole replies

  /// The reply last built for exactly this `query` (the raw query string) at `hub`, if no count
  /// in this shard moved since and its oldest count is still fresh: the hot path's shortcut past
  /// parsing the ids, looking each up and writing the JSON again.
  ///
  /// The reply's bytes are copied for the caller: a shared array would be retained and released
  /// by every request, from every HTTP thread, each time moving its count's cache line between
  /// the cores (twice the copy's cost, measured on two threads).
  public func rememberedReply(hub: HubID, query: String, now: Date) -> StockReply? {
    let nowSeconds = now.timeIntervalSinceReferenceDate
    let ttl = timeToLive
    // The shard borrowed, not retained: every stock lookup comes here, from every HTTP thread.
    return unretainedShards[shardIndex(for: hub)].with { shard -> StockReply? in
      shard.replies.find(hub, query) { memo -> StockReply? in
        let age = nowSeconds - memo.asOf
        guard memo.epoch == shard.epoch.load(ordering: .acquiring), age < ttl else { return nil }
        return StockReply(
          body: Array(memo.body), asOf: Date(timeIntervalSinceReferenceDate: memo.asOf),
          maxAge: max(0, Int((ttl - age).rounded(.down))))
      } ?? nil
    }
  }

  /// Remembers `reply`, built from `lookup`, for `rememberedReply` — only when this query was
  /// asked before (a stream of queries each asked once, as screens of random products make,
  /// would otherwise fill the memory with replies that never hit and rebuild it every 4,096),
  /// and unless a count moved since the lookup (then it is already stale and is dropped).
  public func remember(_ reply: StockReply, hub: HubID, query: String, lookup: StockLookup) {
    let shard = shard(for: hub)
    // Writers take `held` first, so the accounting and the index change together.
    shard.held.withLock { heldByHub in
      guard shard.epoch.load(ordering: .acquiring) == lookup.epoch else { return }
      // Changed in place: a copy taken out of the dictionary would copy the whole set of asked
      // queries on every request.
      guard heldByHub[hub, default: Held()].askedBefore(query) else { return }
      var held = heldByHub.removeValue(forKey: hub) ?? Held()
      let size = query.utf8.count + reply.body.count
      if held.count >= Self.maximumRepliesPerHub || held.bytes + size > Self.maximumReplyBytesPerHub {
        shard.replies.removeAll { $0.hub == hub }
        held.count = 0
        held.bytes = 0
      }
      let memo = Memo(
        hub: hub, body: reply.body, asOf: reply.asOf.timeIntervalSinceReferenceDate, epoch: lookup.epoch)
      if let replaced = shard.replies.insert(memo, hub, query) {
        held.bytes -= query.utf8.count + replaced.body.count
        held.count -= 1
      }
      held.bytes += size
      held.count += 1
      heldByHub[hub] = held
    }
  }

  /// Bounds the entries (counts, unknown ids, invalidation marks) kept per hub.
  static let maximumEntriesPerHub = 50_000

  /// Bound the memory of remembered replies; past either, a hub's replies are forgotten at once.
  static let maximumRepliesPerHub = 4096
  static let maximumReplyBytesPerHub = 4 << 20

  /// Empties the cache, forgetting remembered sequences too, and fences off fills in flight.
  public func removeAll() {
    generationCounter.add(1, ordering: .acquiringAndReleasing)
    for shard in shards {
      shard.slots.withLock { $0.removeAll() }
      shard.epoch.add(1, ordering: .acquiringAndReleasing)
      shard.held.withLock { held in
        held.removeAll()
        shard.replies.removeAll()
      }
    }
  }

  /// Number of cached entries (counts, unknowns and invalidation markers), for metrics.
  public var entryCount: Int {
    shards.reduce(0) { total, shard in
      total + shard.slots.withLock { hubs in hubs.values.reduce(0) { $0 + $1.count } }
    }
  }

  private func shard(for hub: HubID) -> Shard { shards[shardIndex(for: hub)] }

  private func shardIndex(for hub: HubID) -> Int { Int(UInt(bitPattern: hub.hashValue) % UInt(shards.count)) }

  /// One cache entry. `count` ≥ 0 is a count; negative values mark unknown or invalidated.
  struct Slot: Sendable {
    static let unknown = -1
    static let invalidated = -2
    var count: Int
    /// Seconds since the reference date.
    var readAt: Double
    var sequence: Int64
  }

  final class Shard: Sendable {
    let slots = Mutex<[HubID: [SKU: Slot]]>([:])
    /// Bumped by every invalidation in this shard; a remembered reply is good only while the
    /// epoch it was built at is current.
    let epoch = Atomic<UInt64>(0)
    /// Remembered replies by hub and raw query: read by every lookup, written once per new id
    /// set.
    let replies = ByteKeyIndex<Memo>()
    /// How many replies each hub holds, and their bytes; writers of `replies` hold its lock.
    let held = Mutex<[HubID: Held]>([:])
  }

  struct Held: Sendable {
    var count = 0
    var bytes = 0
    /// Hashes of the queries asked once and not yet remembered; forgotten whole past `askedBound`.
    var asked: Set<Int> = []

    static let askedBound = 16_384

    /// Whether `query` was asked before; notes it as asked when not.
    mutating func askedBefore(_ query: String) -> Bool {
      let hash = query.hashValue
      if asked.remove(hash) != nil { return true }
      if asked.count >= Self.askedBound { asked.removeAll(keepingCapacity: true) }
      asked.insert(hash)
      return false
    }
  }

  /// A reply's bytes in memory of its own (no reference count to take when they are read).
  final class Memo: @unchecked Sendable {
    let hub: HubID
    let body: UnsafeBufferPointer<UInt8>
    let asOf: Double
    let epoch: UInt64

    init(hub: HubID, body: [UInt8], asOf: Double, epoch: UInt64) {
      self.hub = hub
      let bytes = UnsafeMutableBufferPointer<UInt8>.allocate(capacity: body.count)
      _ = bytes.initialize(from: body)
      self.body = UnsafeBufferPointer(bytes)
      self.asOf = asOf
      self.epoch = epoch
    }

    deinit { body.deallocate() }
  }
}

/// What the database said about one SKU, for `StockCache.fill`: its count (nil if the hub has
/// no such product) and its version (use 0 for an unknown product).
public struct StockRow: Hashable, Sendable {
  public var sku: SKU
  public var count: Int?
  public var sequence: Int64

  public init(sku: SKU, count: Int?, sequence: Int64) {
    self.sku = sku
    self.count = count
    self.sequence = sequence
  }
}

/// The result of `StockCache.lookup`, aligned with the requested SKUs, completed with
/// `resolve` after the misses were read from the database, then written by `StockReplyWriter`.
public struct StockLookup: Sendable {
  /// What is known about one requested SKU.
  public enum Entry: Hashable, Sendable {
    case count(Int, readAt: Date)
    /// The hub has no such product (as of `readAt`); left out of replies.
    case unknown(readAt: Date)
    /// Not cached or too old: read it from the database.
    case miss
  }

  /// Pass to `StockCache.fill` with the rows read for `misses`.
  public let generation: UInt64
  /// The shard's invalidation epoch when the lookup ran (for `StockCache.remember` and for
  /// sharing database reads only between requests that saw the same state).
  public internal(set) var epoch: UInt64 = 0
  /// Counts (≥ 0) or `unknownMark`/`missMark`, one per requested SKU, in request order.
  private(set) var counts: [Int]
  private(set) var readAts: [Double]
  /// The requested SKUs that must be read from the database, in request order.
  public private(set) var misses: [SKU] = []
  /// Oldest `readAt` (seconds since the reference date) among resolved entries.
  private(set) var oldestReadAt = Double.infinity
  /// Some miss was an entry that aged out (not one never read or dropped by an event): the
  /// hub's other aged-out entries are worth reading along with it (`StockCache.expired`).
  public internal(set) var metAgedOut = false

  static let unknownMark = -1
  static let missMark = -2

  init(generation: UInt64, capacity: Int) {
    self.generation = generation
    counts = []
    counts.reserveCapacity(capacity)
    readAts = []
    readAts.reserveCapacity(capacity)
  }

  mutating func add(count: Int, readAt: Double) {
    counts.append(count)
    readAts.append(readAt)
    if readAt < oldestReadAt { oldestReadAt = readAt }
  }

  mutating func addMiss(_ sku: SKU) {
    counts.append(Self.missMark)
    readAts.append(0)
    misses.append(sku)
  }

  mutating func addMisses(_ skus: [SKU]) {
    for sku in skus { addMiss(sku) }
  }

  /// One entry per requested SKU, in request order.
  public var entries: [Entry] {
    zip(counts, readAts).map { count, readAt in
      switch count {
      case Self.missMark: .miss
      case Self.unknownMark: .unknown(readAt: Date(timeIntervalSinceReferenceDate: readAt))
      default: .count(count, readAt: Date(timeIntervalSinceReferenceDate: readAt))
      }
    }
  }

  /// Whether every requested SKU is resolved (no `.miss` left).
  public var isComplete: Bool { misses.isEmpty }

  /// Fills the misses with what the database answered (`skus` is the requested list the lookup
  /// was made with). A miss with no row is unknown.
  public mutating func resolve(skus: [SKU], rows: [StockRow], readAt: Date) {
    guard !misses.isEmpty else { return }
    let readSeconds = readAt.timeIntervalSinceReferenceDate
    var byKey: [SKU: Int] = [:]
    byKey.reserveCapacity(rows.count)
    for row in rows { byKey[row.sku] = row.count.map { max(0, $0) } ?? Self.unknownMark }
    for index in counts.indices where counts[index] == Self.missMark {
      counts[index] = byKey[skus[index]] ?? Self.unknownMark
      readAts[index] = readSeconds
      if readSeconds < oldestReadAt { oldestReadAt = readSeconds }
    }
    misses.removeAll()
  }
}
