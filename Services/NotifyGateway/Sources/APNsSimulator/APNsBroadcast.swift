import Foundation

/// A broadcast push (iOS 18 channels): `POST /4/broadcasts/apps/<bundle id>` with
/// `apns-channel-id`, updating every Live Activity subscribed to the channel at once.
public struct APNsBroadcastRequest: Sendable, Hashable {
  /// The channel, as APNs named it when it was created (base64).
  public var channelID: String
  public var bundleID: String
  /// 10, 5, or 1 (low power, broadcasts only).
  public var priority: Int
  /// After this, APNs stops trying; nil sends `apns-expiration: 0`.
  public var expiration: Date?
  /// Lowercase UUID (`apns-request-id`).
  public var id: String
  public var payload: [UInt8]

  public init(
    channelID: String, bundleID: String, priority: Int, expiration: Date?, id: String, payload: [UInt8]
  ) {
    self.channelID = channelID
    self.bundleID = bundleID
    self.priority = priority
    self.expiration = expiration
    self.id = id
    self.payload = payload
  }

  /// The headers as APNs reads them (without `authorization`).
  public var headers: [String: String] {
    [
      "apns-channel-id": channelID, "apns-push-type": "LiveActivity", "apns-priority": String(priority),
      "apns-expiration": String(Int64(expiration?.timeIntervalSince1970.rounded(.down) ?? 0)),
      "apns-request-id": id,
    ]
  }

  public var path: String { "/4/broadcasts/apps/" + bundleID }
}

/// Creating a channel: `POST /1/apps/<bundle id>/channels` with
/// `{ "message-storage-policy": 0 | 1, "push-type": "LiveActivity" }`; APNs answers 201 with the
/// channel's id in `apns-channel-id`.
public struct APNsChannelRequest: Sendable, Hashable {
  public var bundleID: String
  /// 0: a device that was offline gets nothing sent meanwhile; 1: it gets the latest.
  public var storagePolicy: Int
  public var id: String

  public init(bundleID: String, storagePolicy: Int, id: String) {
    self.bundleID = bundleID
    self.storagePolicy = storagePolicy
    self.id = id
  }

  public var path: String { "/1/apps/" + bundleID + "/channels" }

  public var body: [UInt8] {
    Array(#"{"message-storage-policy":\#(storagePolicy),"push-type":"LiveActivity"}"#.utf8)
  }
}

/// APNs's answer to a channel request: the status, the new channel's id (201), or the reason.
public struct APNsChannelResponse: Sendable, Hashable {
  public var status: Int
  public var channelID: String?
  public var reason: String?

  public init(status: Int, channelID: String? = nil, reason: String? = nil) {
    self.status = status
    self.channelID = channelID
    self.reason = reason
  }
}

extension APNsTransport {
  /// Transports without channels answer as APNs does for a path it does not serve.
  public func createChannel(_ request: APNsChannelRequest) async throws -> APNsChannelResponse {
    APNsChannelResponse(status: 404, reason: "BadPath")
  }

  public func broadcast(_ request: APNsBroadcastRequest) async throws -> APNsResponse {
    APNsResponse(status: 404, reason: "BadPath", id: request.id)
  }
}
