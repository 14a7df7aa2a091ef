import Foundation
import GrocerContracts
import Synchronization

/// Each hub's catalogue snapshot and every hub's delivery area, kept so the tree, its pages, the
/// home and the address lookup are answered from memory.
///
/// A hub's snapshot is dropped by `invalidate` (this replica's own catalogue writes, and the
/// `catalogue.changed` and `hub.changed` events of every replica's), by `removeAll` (after a
/// broker reconnect, when events may have been missed) and after `maximumAge`, which lets
/// popularity, which moves with every order and raises no event, reach the home's rows. The
/// areas are dropped by any invalidation. A build that began before an invalidation that
/// concerns it is not kept, so an older catalogue never replaces a newer one.
public final class CatalogueMemory: Sendable {
  public let maximumAge: TimeInterval

  /// Taken before a build reads the database, handed back to `keep`.
  struct Generation: Hashable, Sendable {
    fileprivate var all: UInt64
    fileprivate var hub: UInt64
  }

  /// A whole reply written from a snapshot, kept with its tag until `validUntil` (a home's
  /// opening hours change its body at the hub's next opening or closing).
  public struct Reply: Sendable {
    public var body: [UInt8]
    public var tag: String
    public var validUntil: Date
  }

  /// Replies kept per hub at most: a page is asked for by cursor and limit, so their number is
  /// bounded by the catalogue, but not small.
  public static let maximumReplies = 4096

  private struct Kept {
    var snapshot: CatalogueSnapshot
    var builtAt: TimeInterval
    /// Whole replies written from `snapshot`, by path and query; they go with it.
    var replies: [String: Reply] = [:]
  }

  private struct State {
    var kept: [HubID: Kept] = [:]
    var areas: [HubID: DeliveryArea]?
    /// Raised by `removeAll`.
    var all: UInt64 = 0
    /// Raised by each invalidation of a hub.
    var hubs: [HubID: UInt64] = [:]
    /// Raised by every invalidation and `removeAll`: the areas' generation.
    var any: UInt64 = 0
    /// The build of each hub's snapshot under way, and the generation it began at.
    var builds: [HubID: (generation: Generation, task: Task<CatalogueSnapshot, any Error>)] = [:]
    var buildsStarted = 0

    func generation(_ hub: HubID) -> Generation { Generation(all: all, hub: hubs[hub] ?? 0) }
  }

  private let state = Mutex(State())

  public init(maximumAge: TimeInterval = 300) { self.maximumAge = maximumAge }

  /// `hub`'s snapshot when one is kept and young enough at `now`.
  public func snapshot(hub: HubID, now: Date) -> CatalogueSnapshot? {
    state.withLock { state in
      guard let kept = state.kept[hub], now.timeIntervalSinceReferenceDate - kept.builtAt < maximumAge else {
        return nil
      }
      return kept.snapshot
    }
  }

  /// A reply written from `hub`'s kept snapshot for `key`, while both are current at `now`.
  public func reply(hub: HubID, key: String, now: Date) -> Reply? {
    state.withLock { state in
      guard let kept = state.kept[hub], now.timeIntervalSinceReferenceDate - kept.builtAt < maximumAge,
        let reply = kept.replies[key], now < reply.validUntil
      else { return nil }
      return reply
    }
  }

  /// Keeps `reply` for `key` if `snapshot`, which it was written from, is still `hub`'s.
  public func keep(_ reply: Reply, hub: HubID, key: String, from snapshot: CatalogueSnapshot) {
    state.withLock { state in
      guard let kept = state.kept[hub], kept.snapshot === snapshot,
        kept.replies.count < Self.maximumReplies || kept.replies[key] != nil
      else { return }
      state.kept[hub]?.replies[key] = reply
    }
  }

  /// `hub`'s snapshot: the kept one while young enough at `now`, else the one `build` reads from
  /// the store. A build is shared by every caller that misses while it runs and since no
  /// invalidation of the hub: when a snapshot ages out under load, the store is read once, not
  /// once per request. A build that began before an invalidation is not kept, nor joined.
  public func snapshot(
    hub: HubID, now: Date, building build: @escaping @Sendable () async throws -> CatalogueSnapshot
  ) async throws -> CatalogueSnapshot {
    let kept: CatalogueSnapshot?
    let building: Task<CatalogueSnapshot, any Error>?
    (kept, building) = state.withLock { state in
      if let kept = state.kept[hub], now.timeIntervalSinceReferenceDate - kept.builtAt < maximumAge {
        return (kept.snapshot, nil)
      }
      let generation = state.generation(hub)
      if let running = state.builds[hub], running.generation == generation { return (nil, running.task) }
      let task = Task {
        defer { self.buildEnded(hub: hub, generation: generation) }
        let snapshot = try await build()
        self.keep(snapshot, generation: generation, builtAt: now)
        return snapshot
      }
      state.builds[hub] = (generation, task)
      state.buildsStarted += 1
      return (nil, task)
    }
    if let kept { return kept }
    return try await building!.value
  }

  /// Builds begun so far (tests).
  var buildsStarted: Int { state.withLock { $0.buildsStarted } }

  /// Keeps `snapshot` unless its hub was invalidated since `generation` was taken.
  private func keep(_ snapshot: CatalogueSnapshot, generation: Generation, builtAt: Date) {
    let hub = snapshot.hub.id
    state.withLock { state in
      guard state.generation(hub) == generation else { return }
      state.kept[hub] = Kept(snapshot: snapshot, builtAt: builtAt.timeIntervalSinceReferenceDate)
    }
  }

  private func buildEnded(hub: HubID, generation: Generation) {
    state.withLock { state in
      if state.builds[hub]?.generation == generation { state.builds[hub] = nil }
    }
  }

  /// Every hub's delivery area, when kept.
  public var areas: [HubID: DeliveryArea]? { state.withLock { $0.areas } }

  /// What a read of every area must pass to `keep(areas:)`: taken before the database read.
  public var areasGeneration: UInt64 { state.withLock { $0.any } }

  /// Keeps `areas` unless any hub was invalidated since `generation` was taken.
  public func keep(areas: [HubID: DeliveryArea], generation: UInt64) {
    state.withLock { state in
      guard state.any == generation else { return }
      state.areas = areas
    }
  }

  public func invalidate(hub: HubID) {
    state.withLock { state in
      state.kept[hub] = nil
      state.areas = nil
      state.hubs[hub, default: 0] &+= 1
      state.any &+= 1
    }
  }

  public func removeAll() {
    state.withLock { state in
      state.kept = [:]
      state.areas = nil
      state.all &+= 1
      state.any &+= 1
    }
  }
}
