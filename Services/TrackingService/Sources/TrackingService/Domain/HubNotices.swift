import Foundation
import GrocerContracts
import Synchronization

/// The current notice of each hub (`hub.notice` from NotifyGateway), which the snapshot of every
/// running order at that hub carries until it expires. A notice replaces the hub's older one
/// only when its sequence is higher (events may come again, or late).
public final class HubNotices: Sendable {
  private struct Held {
    var notice: HubNotice
    var sequence: Int64
  }

  private let held = Mutex<[HubID: Held]>([:])
  private let revisionCounter = Atomic<Int64>(0)
  private let loadedFlag = Atomic<Bool>(false)

  public init() {}

  /// Whether the notices kept in the database were read (`markLoaded`).
  public var loaded: Bool { loadedFlag.load(ordering: .acquiring) }

  public func markLoaded() { loadedFlag.store(true, ordering: .releasing) }

  /// Raised with every notice taken, so replies built before it are built again.
  public var revision: Int64 { revisionCounter.load(ordering: .acquiring) }

  /// Takes `notice` as its hub's if it is newer than the one held; true if it was.
  @discardableResult
  public func take(_ notice: HubNotice, sequence: Int64) -> Bool {
    let taken = held.withLock { held -> Bool in
      if let current = held[notice.hub], current.sequence >= sequence { return false }
      held[notice.hub] = Held(notice: notice, sequence: sequence)
      return true
    }
    if taken { revisionCounter.add(1, ordering: .releasing) }
    return taken
  }

  /// What an order's snapshot at `hub` shows at `now`: the hub's notice while it is current,
  /// for an order still running (nil for a finished one).
  public func view(hub: HubID, status: TrackingStatus, at now: Date) -> HubNoticeView? {
    status.isTerminal ? nil : current(hub: hub, at: now)
  }

  /// The hub's notice while it shows at `now`.
  public func current(hub: HubID, at now: Date) -> HubNoticeView? {
    held.withLock { $0[hub] }.flatMap { $0.notice.isCurrent(at: now) ? $0.notice.view : nil }
  }

  /// When the hub's notice stops showing (nil: none showing).
  public func expiry(hub: HubID, at now: Date) -> Date? {
    held.withLock { $0[hub] }.flatMap { $0.notice.isCurrent(at: now) ? $0.notice.expiresAt : nil }
  }
}
