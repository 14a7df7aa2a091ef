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
  /// moved (or the stage data did), the version rises by one and `generatedAt` is `now`.
  public static func revise(
    _ current: TrackingRecord, to next: TrackingRecord?, at now: Date, eta: ETAModel
  ) -> TrackingRevision {
    guard var next else { return .unchanged(current) }
    next.eta = eta.estimate(next, now: now)
    var changed: [TrackingChange] = []
    if next.state.status != current.state.status || next.state.note != current.state.note {
      changed.append(.stage)
    }
    if next.eta != current.eta { changed.append(.eta) }
    if next.riderView != current.riderView { changed.append(.rider) }
    guard !changed.isEmpty || next.state != current.state else { return .unchanged(current) }
    next.version = current.version + 1
    next.generatedAt = now
    return .changed(next, changed)
  }
}
