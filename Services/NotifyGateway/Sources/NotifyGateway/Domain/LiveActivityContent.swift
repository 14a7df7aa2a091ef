import Foundation
import GrocerContracts

/// What the Live Activity card shows (the app's `ContentState`): the stage, the ETA range as
/// Unix seconds, the rider's first name.
public struct LiveActivityContent: Codable, Hashable, Sendable {
  public var status: String
  public var etaEarliest: Int?
  public var etaLatest: Int?
  public var riderFirstName: String?

  public init(status: String, etaEarliest: Int?, etaLatest: Int?, riderFirstName: String?) {
    self.status = status
    self.etaEarliest = etaEarliest
    self.etaLatest = etaLatest
    self.riderFirstName = riderFirstName
  }

  public init(_ snapshot: TrackingSnapshot) {
    self.init(
      status: snapshot.status.rawValue, etaEarliest: snapshot.eta.map { Self.seconds($0.earliest) },
      etaLatest: snapshot.eta.map { Self.seconds($0.latest) }, riderFirstName: snapshot.rider?.firstName)
  }

  static func seconds(_ date: Date) -> Int { Int(date.timeIntervalSince1970.rounded(.down)) }
}

/// What a Live Activity push does to the card: starts it (push-to-start), shows new content, or
/// ends the activity.
public enum LiveActivityEvent: String, Sendable, Hashable { case start, update, end }
