import Foundation
import GrocerContracts

/// How long until the door, as an absolute range. A deliberately simple model, documented here
/// and in the README:
///
/// - Before the rider leaves (`placed`, `picking`): what is left of the stage's usual duration,
///   counted from when the stage began, plus a usual ride (`ride`).
/// - On the way or arriving, with a rider fix and a destination: the straight-line distance ×
///   `detour` at `speed` metres per second, from when the fix was taken; `low` and `high` scale
///   it, and the handover (`handover`) is added to the latest.
/// - Without a fix: the usual ride from when the stage began (`onTheWay`), or `arrivingWindow`.
/// - A problem keeps the estimate of the stage it interrupted (the caller passes that stage);
///   delivered or cancelled: none.
///
/// Then the range is made honest at `now` (the snapshot's `generatedAt`): never before it, never
/// narrower than `minimumWidth`, both ends on whole minutes. A late rider therefore moves the
/// range forward; it never shows a time already past.
public struct ETAModel: Sendable {
  /// Seconds a stage usually takes before the rider leaves: (shortest, longest).
  public var placed: (low: TimeInterval, high: TimeInterval) = (120, 300)
  public var picking: (low: TimeInterval, high: TimeInterval) = (180, 360)
  /// A usual ride when the position is unknown.
  public var ride: (low: TimeInterval, high: TimeInterval) = (480, 720)
  public var arrivingWindow: (low: TimeInterval, high: TimeInterval) = (60, 180)
  /// Rider speed in metres per second (a bike in town, about 16 km/h).
  public var speed: Double = 4.5
  /// Streets are longer than the straight line.
  public var detour: Double = 1.3
  public var low: Double = 0.9
  public var high: Double = 1.3
  public var handover: TimeInterval = 60
  public var minimumWidth: TimeInterval = 120

  public init() {}

  /// What the estimate needs to know about an order.
  public struct Input: Hashable, Sendable {
    public var stage: TrackingStatus
    public var stageSince: Date
    public var fix: RiderView?
    public var destination: GeoPoint?

    public init(stage: TrackingStatus, stageSince: Date, fix: RiderView?, destination: GeoPoint?) {
      self.stage = stage
      self.stageSince = stageSince
      self.fix = fix
      self.destination = destination
    }
  }

  /// The range for `input`, honest at `now`; nil once the order is finished.
  public func estimate(_ input: Input, now: Date) -> ETARange? {
    let raw: (Date, Date)
    switch input.stage {
    case .delivered, .cancelled, .problem:
      return nil
    case .placed:
      raw = (
        input.stageSince + placed.low + ride.low, input.stageSince + placed.high + ride.high
      )
    case .picking:
      raw = (input.stageSince + picking.low + ride.low, input.stageSince + picking.high + ride.high)
    case .onTheWay, .arriving:
      if let fix = input.fix, let destination = input.destination {
        let metres = Self.distance(from: GeoPoint(lat: fix.lat, lng: fix.lng), to: destination) * detour
        let seconds = metres / speed
        raw = (fix.recordedAt + seconds * low, fix.recordedAt + seconds * high + handover)
      } else if input.stage == .arriving {
        raw = (input.stageSince + arrivingWindow.low, input.stageSince + arrivingWindow.high)
      } else {
        raw = (input.stageSince + ride.low, input.stageSince + ride.high)
      }
    }
    return honest(earliest: raw.0, latest: raw.1, now: now)
  }

  /// The range of `record` at `now`: none once the order is finished; a problem keeps the
  /// estimate of the stage it interrupted.
  public func estimate(_ record: TrackingRecord, now: Date) -> ETARange? {
    guard !record.state.status.isTerminal else { return nil }
    return estimate(
      Input(
        stage: record.state.stage, stageSince: record.stageSince, fix: record.riderView,
        destination: record.destination), now: now)
  }

  /// Never before `now`, at least `minimumWidth` wide, on whole minutes (rounded up, so
  /// rounding never brings a time before `now`).
  public func honest(earliest: Date, latest: Date, now: Date) -> ETARange {
    let start = Self.ceilToMinute(max(earliest, now))
    let end = Self.ceilToMinute(max(latest, start + minimumWidth))
    return ETARange(earliest: start, latest: end)
  }

  static func ceilToMinute(_ date: Date) -> Date {
    Date(timeIntervalSince1970: (date.timeIntervalSince1970 / 60).rounded(.up) * 60)
  }

  /// Great-circle distance in metres (haversine, mean Earth radius).
  public static func distance(from a: GeoPoint, to b: GeoPoint) -> Double {
    let radius = 6_371_000.0
    let (φ1, φ2) = (a.lat * .pi / 180, b.lat * .pi / 180)
    let Δφ = (b.lat - a.lat) * .pi / 180
    let Δλ = (b.lng - a.lng) * .pi / 180
    let h = sin(Δφ / 2) * sin(Δφ / 2) + cos(φ1) * cos(φ2) * sin(Δλ / 2) * sin(Δλ / 2)
    return 2 * radius * asin(min(1, sqrt(h)))
  }
}
