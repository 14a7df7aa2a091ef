import Foundation
import GrocerContracts
import GrocerCore
import Synchronization

/// Whole encoded cart replies in memory, so a read of a cart that did not change is answered
/// inside the HTTP callback, without a database read or a JSON encoding.
///
/// Coherence with the single writer: every change of a cart, once committed, raises that cart's
/// *floor* to its new version and drops its entry; a change of a hub (pricing, hours) raises the
/// hub's generation. A reader captures the floor state before it reads the database and may only
/// store what it read if nothing newer was announced meanwhile, so an entry never holds an older
/// version than the database. An entry is also dropped when time alone would change the reply
/// (the hub opens or closes, a promo code runs out) and after at most a minute.
///
/// One instance per process: it assumes this process makes every write to its database. Where
/// other replicas write it too (PostgreSQL), it is made with `remembers: false` and holds
/// nothing: their writes, and the catalogue changes their consumers apply, would go unseen here.
public final class CartReplyCache: Sendable {
  struct Key: Hashable, Sendable {
    var user: String
    var hub: HubID
  }

  struct Entry: Sendable {
    var view: CartView
    /// The reply with every kept adjustment (no `seenVersion`, or one older than all of them),
    /// written on its first use (a writer remembers what it rendered without encoding it).
    var full: [UInt8]?
    /// The reply with no adjustments (`seenVersion` at or after the newest one), likewise.
    var bare: [UInt8]?
    var hubGeneration: UInt64
    var freshUntil: Date
  }

  /// What a reader captured before reading, to be handed back with what it read.
  public struct Ticket: Sendable {
    fileprivate var epoch: UInt64
    fileprivate var hubGeneration: UInt64
  }

  struct State {
    var entries: [Key: Entry] = [:]
    var floors: [Key: Int64] = [:]
    var hubGenerations: [HubID: UInt64] = [:]
    var epoch: UInt64 = 0
  }

  /// Beyond this many carts remembered (entries or floors), everything is forgotten at once.
  let capacity: Int
  /// The longest an entry is kept.
  let maximumAge: TimeInterval
  private let state = Mutex(State())

  /// Whether anything is kept (false: every reply and write reads the database).
  public let remembers: Bool

  public init(capacity: Int = 100_000, maximumAge: TimeInterval = 60, remembers: Bool = true) {
    self.capacity = capacity
    self.maximumAge = maximumAge
    self.remembers = remembers
  }

  /// The encoded reply for `seenVersion`, if one is remembered and fresh at `now`.
  public func reply(user: String, hub: HubID, seenVersion: Int64?, now: Date) -> [UInt8]? {
    enum Variant { case full, bare }
    let key = Key(user: user, hub: hub)
    let found = state.withLock { state -> (Variant, CartView, [UInt8]?)? in
      guard let entry = state.entries[key] else { return nil }
      guard entry.freshUntil > now, entry.hubGeneration == state.hubGenerations[hub, default: 0] else {
        state.entries[key] = nil
        return nil
      }
      let adjustments = entry.view.adjustments
      guard let seenVersion, let newest = adjustments.last?.version else {
        return (.full, entry.view, entry.full)
      }
      if seenVersion >= newest { return (.bare, entry.view, entry.bare) }
      if adjustments.allSatisfy({ $0.version > seenVersion }) { return (.full, entry.view, entry.full) }
      return nil
    }
    guard let (variant, view, bytes) = found else { return nil }
    if let bytes { return bytes }
    // First use: encode outside the lock, then keep it if the entry still shows that cart.
    var shown = view
    if variant == .bare { shown.adjustments = [] }
    let encoded = shown.jsonBytes()
    state.withLock { state in
      guard var entry = state.entries[key], entry.view == view else { return }
      if variant == .full { entry.full = encoded } else { entry.bare = encoded }
      state.entries[key] = entry
    }
    return encoded
  }

  /// The remembered cart of `user` at `hub` if it is exactly `version` of it, whatever its age:
  /// the writer builds the next version from it instead of reading every line again. Exact
  /// because every change of what a reply shows (lines, names, prices, adjustments, promo code)
  /// raises the version, except a hub's pricing or hours, which the generation check covers;
  /// totals, promo conditions and opening hours are computed afresh by whoever uses it.
  public func view(user: String, hub: HubID, version: Int64) -> CartView? {
    state.withLock { state in
      guard let entry = state.entries[Key(user: user, hub: hub)], entry.view.version == version,
        entry.hubGeneration == state.hubGenerations[hub, default: 0]
      else { return nil }
      return entry.view
    }
  }

  /// Call before reading a cart from the database.
  public func ticket(hub: HubID) -> Ticket {
    state.withLock { Ticket(epoch: $0.epoch, hubGeneration: $0.hubGenerations[hub, default: 0]) }
  }

  /// Remembers `view` (read after `ticket` was taken) unless a newer version or a hub change was
  /// announced since. `view` must carry every kept adjustment (read without `seenVersion`).
  public func remember(_ view: CartView, user: String, freshUntil: Date, ticket: Ticket) {
    guard remembers else { return }
    let key = Key(user: user, hub: view.hub)
    state.withLock { state in
      guard state.epoch == ticket.epoch, state.hubGenerations[view.hub, default: 0] == ticket.hubGeneration,
        view.version >= state.floors[key, default: 0]
      else { return }
      if state.entries.count >= capacity { state.entries.removeAll(keepingCapacity: true) }
      state.entries[key] = Entry(
        view: view, full: nil, bare: nil, hubGeneration: ticket.hubGeneration,
        freshUntil: freshUntil)
    }
  }

  /// A cart changed to `version` (called once the change is committed).
  func cartChanged(user: String, hub: HubID, version: Int64) {
    state.withLock { state in
      let key = Key(user: user, hub: hub)
      state.entries[key] = nil
      if state.floors.count >= capacity { Self.forgetAll(&state) }
      state.floors[key] = max(version, state.floors[key, default: 0])
    }
  }

  /// Something every cart of `hub` shows changed (its pricing or hours).
  func hubChanged(_ hub: HubID) {
    state.withLock { $0.hubGenerations[hub, default: 0] &+= 1 }
  }

  public var count: Int { state.withLock { $0.entries.count } }

  private static func forgetAll(_ state: inout State) {
    state.entries.removeAll(keepingCapacity: true)
    state.floors.removeAll(keepingCapacity: true)
    state.epoch &+= 1
  }
}
