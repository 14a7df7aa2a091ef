import Foundation
import GrocerContracts

/// What NotifyGateway does with the events it consumes before anything is sent: only the newest
/// update per order waits (an older one is coalesced away), a new Live Activity token starts a
/// new activity, and a delivered order without a Live Activity gets an alert instead.
public enum PendingUpdates {
  /// What became of a `tracking.updated`.
  public enum Queued: Sendable, Hashable {
    case queued
    /// It replaced an older pending update of the same order.
    case coalesced
    /// Older than what is pending or was handled already.
    case stale
    /// Its message was handled before.
    case duplicate
  }

  /// Whether an update of `version` is older than (or the same as) what the order's activity
  /// handled last (nil: no activity): then it is stale.
  public static func isHandled(version: Int64, handled: Int64?) -> Bool {
    handled.map { $0 >= version } ?? false
  }

  /// Where an update of `version` not handled yet goes, given the version pending (nil: none).
  public static func queue(version: Int64, pending: Int64?) -> Queued {
    guard let pending else { return .queued }
    return pending >= version ? .stale : .coalesced
  }

  /// The alert for the user's devices instead of a Live Activity push: an order that became
  /// `delivered` while no activity exists for it, and every stage change after its activity
  /// ended near its eight hours (`activityEnded` while the order ran on).
  public static func alertInstead(of update: TrackingUpdated, hasActivity: Bool, activityEnded: Bool = false)
    -> AlertText?
  {
    guard update.changed.contains(.stage) else { return nil }
    if hasActivity && activityEnded { return .progress(update.snapshot) }
    guard update.snapshot.status == .delivered, !hasActivity else { return nil }
    return .delivered
  }

  /// Whether the update finishes the order (its stage became `delivered` or `cancelled`): the
  /// customer's devices then get a background push, so the app's order list and its copy of the
  /// order turn final without waiting for the app to be opened.
  public static func refreshesDevices(_ update: TrackingUpdated) -> Bool {
    update.changed.contains(.stage) && update.snapshot.status.isTerminal && !update.previousStatus.isTerminal
  }

  /// What a `liveActivity.token` does to the activity of its order.
  public enum TokenChange: Sendable, Hashable {
    /// No activity yet: it starts with this token.
    case start
    /// Another token: a new activity, whose card shows nothing known yet (the next update goes
    /// out in full).
    case replace
    /// The same token again under a newer sequence: only the sequence moves.
    case renumber
    /// An older token event arriving after a newer one (a redelivery): nothing.
    case ignore

    /// Whatever is pending for the order is due now that there is somewhere to send it.
    public var makesPendingDue: Bool { self != .ignore }
  }

  /// `token` with the event's `sequence` (TrackingService counts an order's tokens), given the
  /// activity's current token and sequence (nil: no activity).
  public static func tokenChange(
    token: String, sequence: Int64, current: (token: String?, sequence: Int64)?
  ) -> TokenChange {
    guard let current else { return .start }
    guard current.sequence < sequence else { return .ignore }
    return current.token == token ? .renumber : .replace
  }
}
