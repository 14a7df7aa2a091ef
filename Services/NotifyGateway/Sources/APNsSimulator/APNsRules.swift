import Foundation

/// What APNs checks before it accepts a request, as pure rules (the simulator answers with them,
/// and the gateway checks its own requests with them in tests). From Apple's "Sending
/// notification requests to APNs" and "Handling notification responses from APNs".
public enum APNsRules {
  public static let maximumPayload = 4096
  public static let maximumCollapseID = 64
  public static let liveActivitySuffix = ".push-type.liveactivity"

  /// Device tokens are 32 bytes (64 hex digits); Live Activity push tokens are longer.
  public static func isValidToken(_ token: String, for type: APNsRequest.PushType) -> Bool {
    let bytes = token.utf8
    guard bytes.count.isMultiple(of: 2), bytes.allSatisfy(isHex) else { return false }
    switch type {
    case .alert, .background: return bytes.count == 64
    case .liveactivity: return (66...400).contains(bytes.count)
    }
  }

  static func isHex(_ byte: UInt8) -> Bool {
    (0x30...0x39).contains(byte) || (0x61...0x66).contains(byte) || (0x41...0x46).contains(byte)
  }

  /// Nil if APNs would take `request` for `bundleID`, else the 4xx it would answer.
  public static func check(_ request: APNsRequest, bundleID: String) -> APNsResponse? {
    func refuse(_ status: Int, _ reason: String) -> APNsResponse {
      APNsResponse(status: status, reason: reason, id: request.id)
    }
    guard UUID(uuidString: request.id) != nil, request.id == request.id.lowercased() else {
      return refuse(400, "BadMessageId")
    }
    guard request.priority == 10 || request.priority == 5 else { return refuse(400, "BadPriority") }
    // A background push must go at 5: Apple calls 10 for one an error, as it shows nothing.
    guard request.pushType != .background || request.priority == 5 else { return refuse(400, "BadPriority") }
    if let collapse = request.collapseID, collapse.utf8.count > maximumCollapseID {
      return refuse(400, "BadCollapseId")
    }
    let expectedTopic = request.pushType == .liveactivity ? bundleID + liveActivitySuffix : bundleID
    guard request.topic == bundleID || request.topic == bundleID + liveActivitySuffix else {
      return refuse(400, "BadTopic")
    }
    guard request.topic == expectedTopic else { return refuse(400, "DeviceTokenNotForTopic") }
    guard isValidToken(request.token, for: request.pushType) else { return refuse(400, "BadDeviceToken") }
    guard !request.payload.isEmpty else { return refuse(400, "PayloadEmpty") }
    guard request.payload.count <= maximumPayload else { return refuse(413, "PayloadTooLarge") }
    return nil
  }
}
