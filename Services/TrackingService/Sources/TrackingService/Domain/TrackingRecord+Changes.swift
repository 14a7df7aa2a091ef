import Foundation
import GrocerContracts
import GrocerCore

/// The rules of each change an order's tracking takes: where it starts, what a status move and a
/// rider fix do to it. Each returns the record after the change (nil: nothing to do) or throws
/// the refusal; `TrackingRevision.revise` then decides the version and what changed.
extension TrackingRecord {
  /// The tracking `order.confirmed` starts at `now`: placed (never later than now), version 1,
  /// with its first ETA.
  public static func started(_ order: OrderConfirmed, at now: Date, eta: ETAModel) -> TrackingRecord {
    let placedAt = min(order.placedAt, now)
    // In whole seconds, as every later version (`TrackingRevision.stamp`).
    let generatedAt = Date(timeIntervalSince1970: now.timeIntervalSince1970.rounded(.down))
    var record = TrackingRecord(
      orderId: order.orderId, userId: order.userId, hub: order.hub, state: .placed, fix: nil,
      destination: order.deliverTo, eta: nil, version: 1, generatedAt: generatedAt, placedAt: placedAt,
      stageSince: placedAt, finishedAt: nil, liveActivityToken: nil)
    record.eta = eta.estimate(record, now: generatedAt)
    return record
  }

  /// What started tracking changed: its stage and ETA, from `placed`.
  public static let startChanges: [TrackingChange] = [.stage, .eta]

  /// The record after `command` at `now` (the machine decides the state): a new stage restarts
  /// its clock, another rider drops the fix held, a final status finishes the order.
  public func moved(by command: TrackingCommand, at now: Date) throws(TrackingError) -> TrackingRecord? {
    switch TrackingMachine.apply(command, to: state) {
    case .failure(let illegal): throw TrackingError.illegal(illegal)
    case .success(nil): return nil
    case .success(let next?):
      var record = self
      record.state = next
      if next.stage != state.stage { record.stageSince = now }
      if next.rider != state.rider { record.fix = nil }
      if next.status.isTerminal { record.finishedAt = now }
      return record
    }
  }

  /// The record with the rider's fix taken at `recordedAt`: refused once the order finished or
  /// for a fix from before the order (a minute's grace); nil when the fix held is not older.
  public func withFix(lat: Double, lng: Double, recordedAt: Date) throws(TrackingError) -> TrackingRecord? {
    guard !state.status.isTerminal else {
      throw TrackingError(.conflict, "orderFinished", "the order is \(state.status.rawValue)")
    }
    guard recordedAt >= placedAt - 60 else {
      throw TrackingError(.invalid, "fixTooOld", "`recordedAt` is before the order was placed")
    }
    if let held = fix, held.recordedAt >= recordedAt { return nil }
    var record = self
    record.fix = (lat, lng, recordedAt)
    return record
  }

  /// The `tracking.updated` payload of this version: what `changed`, from `previous`.
  public func update(changed: [TrackingChange], previous: TrackingStatus) -> TrackingUpdated {
    TrackingUpdated(
      userId: userId, hub: hub, snapshot: snapshot, changed: changed, previousStatus: previous)
  }
}

extension TrackingRecord {
  /// Whether registering `token` changes anything: a token already held is not sent again.
  public func takesLiveActivityToken(_ token: String) -> Bool { liveActivityToken != token }
}
