import APNsSimulator
import Foundation
import GrocerContracts
import GrocerCore

/// The bodies of the pushes NotifyGateway sends, as JSON with sorted keys (so they can be
/// compared with golden files). Beside the APNs transport, not in Domain: its size limit is
/// APNs's (`APNsRules.maximumPayload`), and the shapes are ActivityKit's and APNs's.
public enum PushPayloads {
  public typealias Event = LiveActivityEvent

  /// How long after its `timestamp` an update's card goes stale (`stale-date`).
  public static let staleAfter: TimeInterval = 180

  /// The `stale-date` of a push of `event` stamped `timestamp` (an update's or a start's; none
  /// for an end).
  public static func staleDate(event: Event, timestamp: Int) -> Date? {
    event != .end ? Date(timeIntervalSince1970: Double(timestamp) + staleAfter) : nil
  }

  /// An ActivityKit push: `timestamp` is the snapshot's `generatedAt` unless given (the device
  /// ignores an update older than the one it shows); an update goes stale `staleAfter` seconds later; an
  /// end is dismissed `dismissAfter` seconds later.
  ///
  /// Never over APNs's 4 KB: a long alert text or rider name is shortened (whole characters,
  /// with "…") until it fits; a push that cannot be sent would leave the card showing old news.
  public static func liveActivity(
    _ snapshot: TrackingSnapshot, event: Event, alert: AlertText?, timestamp: Int? = nil,
    staleAfter: TimeInterval = staleAfter, dismissAfter: TimeInterval = 900
  ) -> [UInt8] {
    liveActivity(
      LiveActivityContent(snapshot), event: event, alert: alert,
      timestamp: timestamp ?? LiveActivityContent.seconds(snapshot.generatedAt),
      relevance: LiveActivityRelevance.score(snapshot), staleAfter: staleAfter, dismissAfter: dismissAfter)
  }

  /// The static attributes a push-to-start gives the activity (the app's `ActivityAttributes`).
  public struct StartAttributes: Encodable, Sendable, Hashable {
    public var orderId: String
    public var hub: String
  }

  /// The app's `ActivityAttributes` type name a start names (`attributes-type`).
  public static let attributesType = "DeliveryAttributes"

  /// A push-to-start: `event: start` with the attributes, the content, an alert (a start must
  /// alert), a timestamp and a stale date.
  public static func liveActivityStart(
    _ content: LiveActivityContent, orderId: String, hub: String, alert: AlertText, timestamp: Int,
    relevance: Double?
  ) -> [UInt8] {
    liveActivity(
      content, event: .start, alert: alert, timestamp: timestamp, relevance: relevance,
      start: StartAttributes(orderId: orderId, hub: hub))
  }

  /// An ActivityKit push of `content` (the card as it is shown, without a snapshot: an activity
  /// ended at its eight hours, or started by push).
  public static func liveActivity(
    _ content: LiveActivityContent, event: Event, alert: AlertText?, timestamp: Int, relevance: Double?,
    staleAfter: TimeInterval = staleAfter, dismissAfter: TimeInterval = 900, start: StartAttributes? = nil
  ) -> [UInt8] {
    var content = content
    var alert = alert
    while true {
      let bytes = liveActivityBytes(
        content, event: event, alert: alert, timestamp: timestamp,
        staleDate: event != .end ? timestamp + Int(staleAfter) : nil,
        dismissalDate: event == .end ? timestamp + Int(dismissAfter) : nil, relevance: relevance, start: start
      )
      guard bytes.count > APNsRules.maximumPayload else { return bytes }
      if let body = alert?.body, body.count > 2 {
        alert?.body = shortened(body)
      } else if let title = alert?.title, title.count > 2 {
        alert?.title = shortened(title)
      } else if let name = content.riderFirstName, name.count > 2 {
        content.riderFirstName = shortened(name)
      } else {
        return bytes  // nothing left to shorten (cannot happen with our fields)
      }
    }
  }

  /// An ActivityKit push's JSON written by hand (one per push on the hot path), as `JSON.encode`
  /// would write it: keys sorted, absent parts left out (`PayloadGoldenTests` compares).
  static func liveActivityBytes(
    _ content: LiveActivityContent, event: Event, alert: AlertText?, timestamp: Int, staleDate: Int?,
    dismissalDate: Int?, relevance: Double?, start: StartAttributes?
  ) -> [UInt8] {
    var out = JSONBytes(capacity: 384)
    out.beginObject()
    out.key("aps")
    out.beginObject()
    if let alert {
      out.key("alert")
      alert.write(into: &out)
    }
    if let start {
      out.key("attributes")
      start.write(into: &out)
      out.key("attributes-type")
      out.string(attributesType)
    }
    out.key("content-state")
    content.write(into: &out)
    if let dismissalDate {
      out.key("dismissal-date")
      out.int(dismissalDate)
    }
    out.key("event")
    out.string(event.rawValue)
    if let relevance {
      out.key("relevance-score")
      out.double(relevance)
    }
    if let staleDate {
      out.key("stale-date")
      out.int(staleDate)
    }
    out.key("timestamp")
    out.int(timestamp)
    out.endObject()
    out.endObject()
    return out.bytes
  }

  /// About half of `text`, on a character boundary, with an ellipsis (so never below two
  /// characters: callers shorten only what is longer than that).
  static func shortened(_ text: String) -> String {
    String(text.prefix(max(1, text.count / 2))) + "…"
  }

  struct Notice: Encodable {
    struct APS: Encodable {
      var timestamp: Int
      var event: String
      var contentState: Content
      var staleDate: Int
      var alert: AlertText

      enum CodingKeys: String, CodingKey {
        case timestamp, event, alert
        case contentState = "content-state"
        case staleDate = "stale-date"
      }
    }
    struct Content: Encodable {
      var hub: String
      var title: String
      var body: String
      var expiresAt: Int
    }
    var aps: APS
  }

  /// A hub notice broadcast to the hub's channel: the hub-news activity's content (hub, title,
  /// body, when it ends), stale when the notice ends, with an alert. Texts are at most 300
  /// characters (`HubNoticeRules`), far inside 4 KB.
  public static func hubNotice(_ notice: HubNotice, timestamp: Int) -> [UInt8] {
    let expires = LiveActivityContent.seconds(notice.expiresAt)
    return encode(
      Notice(
        aps: .init(
          timestamp: timestamp, event: LiveActivityEvent.update.rawValue,
          contentState: .init(hub: notice.hub, title: notice.title, body: notice.body, expiresAt: expires),
          staleDate: expires, alert: AlertText(title: notice.title, body: notice.body))))
  }

  struct Alert: Encodable {
    struct APS: Encodable {
      var alert: AlertText
      var sound: String
    }
    var aps: APS
    var orderId: String
  }

  /// A plain alert to the customer's devices, naming the order so a tap opens it (shortened
  /// like a Live Activity's to fit in 4 KB).
  public static func alert(_ text: AlertText, orderId: String) -> [UInt8] {
    var text = text
    while true {
      let bytes = encode(Alert(aps: .init(alert: text, sound: "default"), orderId: orderId))
      guard bytes.count > APNsRules.maximumPayload, text.body.count > 2 || text.title.count > 2 else {
        return bytes
      }
      if text.body.count > 2 { text.body = shortened(text.body) } else { text.title = shortened(text.title) }
    }
  }

  /// A background push telling the app that an order finished (`content-available`, nothing
  /// shown): it refreshes its order list and its copy of the order.
  public static func refresh(orderId: String, status: String) -> [UInt8] {
    var out = JSONBytes(capacity: 96)
    out.beginObject()
    out.key("aps")
    out.beginObject()
    out.key("content-available")
    out.int(1)
    out.endObject()
    out.key("orderId")
    out.string(orderId)
    out.key("status")
    out.string(status)
    out.endObject()
    return out.bytes
  }

  static func encode(_ value: some Encodable) -> [UInt8] {
    (try? JSON.encode(value)).map { [UInt8]($0) } ?? []
  }
}
