import Foundation
import GrocerContracts

/// What staff may post as a hub notice, and what a broadcast of it carries.
public enum HubNoticeRules {
  public static let maximumTitle = 60
  public static let maximumBody = 240
  /// How long a notice shows when staff do not say (minutes), and the longest they may ask.
  public static let defaultMinutes = 60
  public static let maximumMinutes = 24 * 60

  /// Why a notice was refused: the field and what is wrong with it.
  public struct Refusal: Error, Hashable, Sendable {
    public var code: String
    public var detail: String
  }

  /// The notice `title`/`body` make for `hub` at `now`, shown for `minutes` (default an hour):
  /// trimmed texts of 1–60 and 1–240 characters without control characters, 1–1,440 minutes.
  public static func notice(
    id: String, hub: HubID, title: String, body: String, minutes: Int?, at now: Date
  ) throws(Refusal) -> HubNotice {
    func text(_ value: String, _ field: String, _ maximum: Int) throws(Refusal) -> String {
      let trimmed = value.trimmingCharacters(in: .whitespacesAndNewlines)
      guard !trimmed.unicodeScalars.contains(where: { $0.properties.generalCategory == .control }) else {
        throw Refusal(code: "\(field)Invalid", detail: "`\(field)` must not contain control characters")
      }
      guard (1...maximum).contains(trimmed.count) else {
        throw Refusal(code: "\(field)Required", detail: "`\(field)` is 1–\(maximum) characters")
      }
      return trimmed
    }
    let minutes = minutes ?? defaultMinutes
    guard (1...maximumMinutes).contains(minutes) else {
      throw Refusal(code: "invalidDuration", detail: "`minutes` is 1–\(maximumMinutes)")
    }
    let postedAt = Date(timeIntervalSince1970: now.timeIntervalSince1970.rounded(.down))
    return HubNotice(
      noticeId: id, hub: hub, title: try text(title, "title", maximumTitle),
      body: try text(body, "body", maximumBody),
      postedAt: postedAt, expiresAt: postedAt + Double(minutes * 60))
  }

  /// Whether a broadcast of `notice` is still worth sending at `now`.
  public static func isWorthBroadcasting(_ notice: HubNotice, at now: Date) -> Bool {
    notice.isCurrent(at: now)
  }
}
