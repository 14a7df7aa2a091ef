import Foundation
import GrocerContracts
import GrocerCore

/// One order's tracking as TrackingService keeps it.
public struct TrackingRecord: Sendable, Hashable {
  public var orderId: String
  public var userId: String
  public var hub: HubID
  public var state: TrackingState
  /// The newest fix of the assigned rider (nil before one arrived, and after a reassignment).
  public var fix: (lat: Double, lng: Double, recordedAt: Date)?
  public var destination: GeoPoint?
  public var eta: ETARange?
  public var version: Int64
  public var generatedAt: Date
  public var placedAt: Date
  public var stageSince: Date
  public var finishedAt: Date?
  public var liveActivityToken: String?
  /// What the lock screen shows, from the push outcomes (not part of `version`).
  public var liveActivity = LiveActivityDelivery()

  public var riderView: RiderView? {
    guard let rider = state.rider, let fix else { return nil }
    return RiderView(firstName: rider.firstName, lat: fix.lat, lng: fix.lng, recordedAt: fix.recordedAt)
  }

  public var snapshot: TrackingSnapshot {
    TrackingSnapshot(
      orderId: orderId, version: version, status: state.status, problem: state.note, eta: eta,
      rider: riderView,
      destination: destination, generatedAt: generatedAt)
  }

  /// The snapshot as the app reads it at `now`: with what the lock screen shows and the hub's
  /// notice from `notices`.
  public func reply(at now: Date, notices: HubNotices? = nil) -> TrackingSnapshot {
    var reply = snapshot
    reply.liveActivity = liveActivity.view(hasToken: liveActivityToken != nil, at: now)
    reply.notice = notices?.view(hub: hub, status: state.status, at: now)
    return reply
  }

  public static func == (lhs: TrackingRecord, rhs: TrackingRecord) -> Bool { lhs.snapshot == rhs.snapshot }
  public func hash(into hasher: inout Hasher) { hasher.combine(snapshot) }
}
