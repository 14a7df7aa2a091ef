import Foundation
import GrocerContracts

/// What a change to an order's tracking comes to: a new version with what a customer sees
/// moved, or nothing (a repeated request, an older fix) with the current record.
public enum TrackingRevision: Sendable, Hashable {
  /// Accepted: a new version.
  case changed(TrackingRecord, [TrackingChange])
  /// Nothing to change: the current snapshot.
  case unchanged(TrackingRecord)

  public var record: TrackingRecord {
    switch self {
    case .changed(let record, _), .unchanged(let record): record
    }
  }

  /// `current` becoming `next` at `now`: the ETA is recomputed, and if anything a customer sees
  /// moved (or the stage data did), the version rises by one and is stamped `stamp(after:at:)`.
  public static func revise(
    _ current: TrackingRecord, to next: TrackingRecord?, at now: Date, eta: ETAModel
  ) -> TrackingRevision {
    guard var next else { return .unchanged(current) }
    let stamp = Self.stamp(after: current.generatedAt, at: now)
    next.eta = eta.estimate(next, now: stamp)
    var changed: [TrackingChange] = []
    if next.state.status != current.state.status || next.state.note != current.state.note {
      changed.append(.stage)
    }
    if next.eta != current.eta { changed.append(.eta) }
    if next.riderView != current.riderView { changed.append(.rider) }
    guard !changed.isEmpty || next.state != current.state else { return .unchanged(current) }
    next.version = current.version + 1
    next.generatedAt = stamp
    return .changed(next, changed)
  }

  /// A new version's `generatedAt`: `now` in whole seconds, and at least a second after the
  /// version before's, so it strictly increases per order in whole seconds. A Live Activity's
  /// push carries it as its `timestamp`, and the system ignores an update that is not newer than
  /// the one shown: two versions in one second must not share a second, and the app's own
  /// foreground update, stamped with the `generatedAt` it fetched, must match the push exactly.
  public static func stamp(after previous: Date, at now: Date) -> Date {
    let seconds = max(
      now.timeIntervalSince1970.rounded(.down), previous.timeIntervalSince1970.rounded(.down) + 1)
    return Date(timeIntervalSince1970: seconds)
  }
}
