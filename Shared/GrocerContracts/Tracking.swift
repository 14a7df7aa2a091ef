import Foundation
import GrocerCore

/// Event types TrackingService publishes.
public enum TrackingEventType {
  /// Every accepted change of an order's tracking: `TrackingUpdated`, subject
  /// `tracking/<orderId>`, sequence the tracking version.
  public static let updated = "tracking.updated"
  /// A Live Activity push token registered (or replaced) for an order: `LiveActivityToken`,
  /// subject `liveActivity/<orderId>`, sequence the count of the order's tokens.
  public static let liveActivityToken = "liveActivity.token"
  public static let source = "tracking-service"
}

/// An order's stage as the app shows it (SPEC.md, TrackingService).
public enum TrackingStatus: String, Codable, Hashable, Sendable, CaseIterable {
  case placed
  case picking
  case onTheWay
  case arriving
  case delivered
  case cancelled
  case problem

  /// Nothing moves an order out of these.
  public var isTerminal: Bool { self == .delivered || self == .cancelled }
}

/// An absolute time range: `{ "earliest", "latest" }`, never a single instant.
public struct ETARange: Codable, Hashable, Sendable {
  public var earliest: Date
  public var latest: Date

  public init(earliest: Date, latest: Date) {
    self.earliest = earliest
    self.latest = latest
  }
}

/// The rider as the customer sees them: `{ "firstName", "lat", "lng", "recordedAt" }`.
public struct RiderView: Codable, Hashable, Sendable {
  public var firstName: String
  public var lat: Double
  public var lng: Double
  public var recordedAt: Date

  public init(firstName: String, lat: Double, lng: Double, recordedAt: Date) {
    self.firstName = firstName
    self.lat = lat
    self.lng = lng
    self.recordedAt = recordedAt
  }
}

/// The tracking snapshot, exactly as `GET /v1/orders/{id}/tracking` answers it:
/// `{ orderId, version, status, problem, eta, rider, destination, generatedAt, liveActivity }`.
/// `problem` holds the message of a `problem` or the reason of a `cancelled`; `destination` is
/// null only for an order placed without `deliverTo`. `liveActivity` (what the lock screen shows,
/// from the push outcomes) and `notice` (the hub's current notice, for a running order) are in
/// replies only, never in `tracking.updated`, and outside `version`.
public struct TrackingSnapshot: Codable, Hashable, Sendable {
  public var orderId: String
  public var version: Int64
  public var status: TrackingStatus
  public var problem: String?
  public var eta: ETARange?
  public var rider: RiderView?
  public var destination: GeoPoint?
  public var generatedAt: Date
  public var liveActivity: LiveActivityView?
  /// The hub's current notice, for a running order (replies only, outside `version`).
  public var notice: HubNoticeView?

  public init(
    orderId: String, version: Int64, status: TrackingStatus, problem: String?, eta: ETARange?,
    rider: RiderView?,
    destination: GeoPoint?, generatedAt: Date, liveActivity: LiveActivityView? = nil
  ) {
    self.orderId = orderId
    self.version = version
    self.status = status
    self.problem = problem
    self.eta = eta
    self.rider = rider
    self.destination = destination
    self.generatedAt = generatedAt
    self.liveActivity = liveActivity
  }

  public func encode(to encoder: any Encoder) throws {
    var container = encoder.container(keyedBy: CodingKeys.self)
    try container.encode(orderId, forKey: .orderId)
    try container.encode(version, forKey: .version)
    try container.encode(status, forKey: .status)
    try container.encode(problem, forKey: .problem)
    try container.encode(eta, forKey: .eta)
    try container.encode(rider, forKey: .rider)
    try container.encode(destination, forKey: .destination)
    try container.encode(generatedAt, forKey: .generatedAt)
    try container.encodeIfPresent(liveActivity, forKey: .liveActivity)
    try container.encodeIfPresent(notice, forKey: .notice)
  }
}

/// Whether the order's Live Activity on the lock screen shows the current tracking:
/// `{ "state": "current" | "stale" | "ended" | "none", "lastPushAt": time | null }`.
public struct LiveActivityView: Codable, Hashable, Sendable {
  public enum State: String, Codable, Hashable, Sendable {
    /// The last push was delivered and the card has not passed its stale date.
    case current
    /// A push failed since the last delivery, or the card passed its stale date.
    case stale
    /// The final push (`event: end`) was delivered.
    case ended
    /// No activity: no token registered, or APNs said the token is gone.
    case none
  }

  public var state: State
  /// When APNs last accepted a push for the activity (nil: none yet).
  public var lastPushAt: Date?

  public init(state: State, lastPushAt: Date?) {
    self.state = state
    self.lastPushAt = lastPushAt
  }

  public func encode(to encoder: any Encoder) throws {
    var container = encoder.container(keyedBy: CodingKeys.self)
    try container.encode(lastPushAt, forKey: .lastPushAt)
    try container.encode(state, forKey: .state)
  }
}

/// What an accepted change changed.
public enum TrackingChange: String, Codable, Hashable, Sendable, CaseIterable {
  case stage
  case eta
  case rider
}

/// Payload of `tracking.updated`: the whole snapshot, what changed, and whose order it is (so
/// NotifyGateway can reach the customer's devices without asking).
public struct TrackingUpdated: Codable, Hashable, Sendable {
  public var userId: String
  public var hub: HubID
  public var snapshot: TrackingSnapshot
  public var changed: [TrackingChange]
  /// The stage before this change (equal to `snapshot.status` when the stage did not move).
  public var previousStatus: TrackingStatus

  public init(
    userId: String, hub: HubID, snapshot: TrackingSnapshot, changed: [TrackingChange],
    previousStatus: TrackingStatus
  ) {
    self.userId = userId
    self.hub = hub
    self.snapshot = snapshot
    self.changed = changed
    self.previousStatus = previousStatus
  }
}

/// Payload of `liveActivity.token`: `{ orderId, userId, hub, token }` (lowercase hex).
public struct LiveActivityToken: Codable, Hashable, Sendable {
  public var orderId: String
  public var userId: String
  public var hub: HubID
  public var token: String

  public init(orderId: String, userId: String, hub: HubID, token: String) {
    self.orderId = orderId
    self.userId = userId
    self.hub = hub
    self.token = token
  }
}
