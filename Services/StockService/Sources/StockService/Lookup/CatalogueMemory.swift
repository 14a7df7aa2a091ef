import Foundation
import GrocerContracts
import Synchronization

/// Each hub's catalogue snapshot, kept so the tree, its pages and the home are answered from
/// memory.
///
/// A snapshot is dropped by `invalidate` (this replica's own catalogue writes, and the
/// `catalogue.changed` and `hub.changed` events of every replica's), by `removeAll` (after a
/// broker reconnect, when events may have been missed) and after `maximumAge`, which lets
/// popularity, which moves with every order and raises no event, reach the home's rows. A build
/// that began before an invalidation of its hub is not kept, so an older catalogue never
/// replaces a newer one.
public final class CatalogueMemory: Sendable {
  public let maximumAge: TimeInterval

  private struct Kept {
    var snapshot: CatalogueSnapshot
    var builtAt: TimeInterval
  }

  private struct State {
    var kept: [HubID: Kept] = [:]
    /// Raised by every invalidation of a hub (and of all of them).
    var generations: [HubID: UInt64] = [:]
    var everyHub: UInt64 = 0
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

  /// What a build must pass to `keep`: read before the build's database read.
  public func generation(hub: HubID) -> UInt64 {
    state.withLock { $0.everyHub &+ ($0.generations[hub] ?? 0) }
  }

  /// Keeps `snapshot` unless its hub was invalidated since `generation` was taken.
  public func keep(_ snapshot: CatalogueSnapshot, generation: UInt64, builtAt: Date) {
    let hub = snapshot.hub.id
    state.withLock { state in
      guard state.everyHub &+ (state.generations[hub] ?? 0) == generation else { return }
      state.kept[hub] = Kept(snapshot: snapshot, builtAt: builtAt.timeIntervalSinceReferenceDate)
    }
  }

  public func invalidate(hub: HubID) {
    state.withLock { state in
      state.kept[hub] = nil
      state.generations[hub, default: 0] &+= 1
    }
  }

  public func removeAll() {
    state.withLock { state in
      state.kept = [:]
      state.everyHub &+= 1
    }
  }
}
