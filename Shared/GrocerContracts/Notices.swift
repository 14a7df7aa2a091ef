import Foundation

/// Event types of hub notices: staff post one at NotifyGateway (`POST /v1/hubs/{hub}/notices`),
/// which broadcasts it to the hub's APNs channel and publishes it; TrackingService shows the
/// current one in the snapshot of every running order at that hub.
public enum NoticeEventType {
  /// `HubNotice`, subject `notice/<hub>`, sequence the count of the hub's notices.
  public static let posted = "hub.notice"
  public static let source = "notify-gateway"
}

/// A notice to everyone with an order at a hub (a rain delay, closing early), until `expiresAt`.
/// A newer notice of the hub replaces it.
public struct HubNotice: Codable, Hashable, Sendable {
  public var noticeId: String
  public var hub: HubID
  public var title: String
  public var body: String
  public var postedAt: Date
  public var expiresAt: Date

  public init(noticeId: String, hub: HubID, title: String, body: String, postedAt: Date, expiresAt: Date) {
    self.noticeId = noticeId
    self.hub = hub
    self.title = title
    self.body = body
    self.postedAt = postedAt
    self.expiresAt = expiresAt
  }

  /// Whether it still shows at `now`.
  public func isCurrent(at now: Date) -> Bool { now < expiresAt }

  /// What a tracking snapshot carries of it.
  public var view: HubNoticeView {
    HubNoticeView(title: title, body: body, postedAt: postedAt, expiresAt: expiresAt)
  }
}

/// A hub notice as the tracking snapshot shows it: `{ title, body, postedAt, expiresAt }`.
public struct HubNoticeView: Codable, Hashable, Sendable {
  public var title: String
  public var body: String
  public var postedAt: Date
  public var expiresAt: Date

  public init(title: String, body: String, postedAt: Date, expiresAt: Date) {
    self.title = title
    self.body = body
    self.postedAt = postedAt
    self.expiresAt = expiresAt
  }
}
