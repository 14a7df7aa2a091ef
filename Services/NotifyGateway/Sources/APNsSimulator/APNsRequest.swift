import Foundation

/// One request to APNs's provider API: `POST /3/device/<token>` with these headers and body.
public struct APNsRequest: Sendable, Hashable {
  public enum PushType: String, Sendable, Hashable, Codable {
    case alert
    case liveactivity
    /// A silent push that wakes the app (`content-available: 1`), at priority 5 only.
    case background
  }

  /// The device token (alerts) or the Live Activity's push token, lowercase hex.
  public var token: String
  public var pushType: PushType
  /// The app's bundle id; `<bundle id>.push-type.liveactivity` for Live Activities.
  public var topic: String
  /// 10: at once; 5: when power allows (no budget).
  public var priority: Int
  /// After this, APNs (and we) stop trying; nil sends `apns-expiration: 0` (now or never).
  public var expiration: Date?
  /// Lowercase UUID naming this notification.
  public var id: String
  /// Notifications with one collapse id show as one (at most 64 bytes).
  public var collapseID: String?
  public var payload: [UInt8]

  public init(
    token: String, pushType: PushType, topic: String, priority: Int, expiration: Date?, id: String,
    collapseID: String? = nil, payload: [UInt8]
  ) {
    self.token = token
    self.pushType = pushType
    self.topic = topic
    self.priority = priority
    self.expiration = expiration
    self.id = id
    self.collapseID = collapseID
    self.payload = payload
  }

  /// The request's headers as APNs reads them (without `authorization`, which the transport adds).
  public var headers: [String: String] {
    var headers = [
      "apns-push-type": pushType.rawValue, "apns-topic": topic, "apns-priority": String(priority),
      "apns-expiration": String(Int64(expiration?.timeIntervalSince1970.rounded(.down) ?? 0)), "apns-id": id,
    ]
    if let collapseID { headers["apns-collapse-id"] = collapseID }
    return headers
  }

  public var path: String { "/3/device/" + token }
}

/// APNs's answer: 200, or an error status with its `reason` (and, for 410, when the token
/// stopped being valid).
public struct APNsResponse: Sendable, Hashable {
  public var status: Int
  public var reason: String?
  /// For 410: the last time APNs knew the token was valid.
  public var timestamp: Date?
  /// The `apns-id` APNs echoes.
  public var id: String?

  public init(status: Int, reason: String? = nil, timestamp: Date? = nil, id: String? = nil) {
    self.status = status
    self.reason = reason
    self.timestamp = timestamp
    self.id = id
  }

  public static let ok = APNsResponse(status: 200)

  /// What to do about it, by Apple's rules.
  public enum Disposition: Sendable, Hashable {
    case delivered
    /// Never retry; the token is dead (410, BadDeviceToken): remove it.
    case removeToken
    /// Never retry: the request itself is wrong (400, 413, 403 token problems…).
    case failed
    /// 429, 500, 503: retry with backoff and jitter, never past the expiration.
    case retry
  }

  public var disposition: Disposition {
    switch status {
    case 200: .delivered
    case 410: .removeToken
    case 400 where reason == "BadDeviceToken": .removeToken
    case 429, 500, 503: .retry
    default: .failed
    }
  }
}

/// Sends requests to APNs (or the simulator): one protocol, so the real provider API and the
/// simulator are interchangeable.
public protocol APNsTransport: Sendable {
  /// APNs's answer; throws only when no answer came (network, time-out), which is retried.
  func send(_ request: APNsRequest) async throws -> APNsResponse
  /// Creates a broadcast channel (iOS 18); throws only when no answer came.
  func createChannel(_ request: APNsChannelRequest) async throws -> APNsChannelResponse
  /// Sends a broadcast push to a channel; throws only when no answer came.
  func broadcast(_ request: APNsBroadcastRequest) async throws -> APNsResponse
}
