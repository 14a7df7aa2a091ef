import Foundation

/// Signs and checks callbacks from the payment provider:
/// `Grocer-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256(secret, "<t>.<resource>.<body>")>`,
/// where `resource` is what the callback is about (the payment id of its path).
///
/// The time is inside the signed text, so a captured callback cannot be replayed once it is
/// older than the tolerance; so is the resource, so a callback signed for one payment is worth
/// nothing against another. The tag is compared in constant time.
public struct WebhookSignature: Sendable {
  public static let header = "Grocer-Signature"

  private let mac: HMACSHA256
  /// How far the signed time may be from now, either way.
  public let tolerance: TimeInterval

  /// - Precondition: `secret` is not empty.
  public init(secret: String, tolerance: TimeInterval = 300) {
    precondition(!secret.isEmpty, "a webhook secret must not be empty")
    guard let mac = HMACSHA256(key: Array(secret.utf8)) else {
      fatalError("libcrypto provides no HMAC-SHA256")
    }
    self.mac = mac
    self.tolerance = tolerance
  }

  /// The header value for `body` about `resource`, signed at `time`.
  public func sign(_ body: [UInt8], for resource: String, at time: Date) -> String {
    let seconds = Int64(time.timeIntervalSince1970.rounded(.down))
    return "t=\(seconds),v1=" + Hex.encode(tag(body, resource: resource, seconds: seconds))
  }

  /// Whether `header` is a valid signature of `body` about `resource`, made within the
  /// tolerance of `now`.
  public func isValid(_ header: String?, body: [UInt8], for resource: String, now: Date) -> Bool {
    guard let header else { return false }
    var seconds: Int64?
    var presented: [[UInt8]] = []
    for part in header.split(separator: ",") {
      let pair = part.trimmingCharacters(in: .whitespaces).split(separator: "=", maxSplits: 1)
      guard pair.count == 2 else { continue }
      switch pair[0] {
      case "t": seconds = Int64(pair[1])
      case "v1": if let bytes = Hex.decode(pair[1]) { presented.append(bytes) }
      default: continue
      }
    }
    guard let seconds, abs(now.timeIntervalSince1970 - Double(seconds)) <= tolerance else { return false }
    let expected = tag(body, resource: resource, seconds: seconds)
    return presented.contains { candidate in
      candidate.withUnsafeBytes { HMACSHA256.tagsMatch(expected, $0) }
    }
  }

  private func tag(_ body: [UInt8], resource: String, seconds: Int64) -> [UInt8] {
    mac.authenticationCode(for: Array("\(seconds).\(resource).".utf8) + body)
  }
}
