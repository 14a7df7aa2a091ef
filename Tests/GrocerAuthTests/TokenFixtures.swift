import Foundation
import GrocerCore

@testable import GrocerAuth

/// Builds tokens by hand, so tests can say exactly what goes into the header and the payload.
enum TokenFixtures {
  static let secret = "test-secret-of-reasonable-length"
  static let start = Date(timeIntervalSince1970: 1_790_000_000)

  static func token(
    header: String = #"{"alg":"HS256","typ":"JWT"}"#, payload: String, secret: String = secret
  )
    -> String
  {
    let signingInput = Base64URL.encode(header) + "." + Base64URL.encode(payload)
    let mac = HMACSHA256(key: Array(secret.utf8))!
    return signingInput + "." + Base64URL.encode(mac.authenticationCode(for: Array(signingInput.utf8)))
  }

  /// A valid payload at `start`, with `extra` JSON members appended.
  static func payload(_ extra: String = "") -> String {
    #"{"sub":"u1","exp":1790003600"# + (extra.isEmpty ? "" : "," + extra) + "}"
  }

  static func verifier(clock: ManualClock = ManualClock(start), secret: String = secret) -> HS256Verifier {
    HS256Verifier(secret: secret, clock: clock)
  }
}

extension Array where Element == UInt8 {
  init(hex: String) {
    var bytes: [UInt8] = []
    var index = hex.startIndex
    while index < hex.endIndex {
      let next = hex.index(index, offsetBy: 2)
      bytes.append(UInt8(hex[index..<next], radix: 16)!)
      index = next
    }
    self = bytes
  }

  var hex: String { map { String(format: "%02x", $0) }.joined() }
}

/// What `verify` threw, or nil when it returned a principal.
func verificationError(_ verifier: HS256Verifier, _ token: String) -> TokenError? {
  do {
    _ = try verifier.verify(token)
    return nil
  } catch {
    return error
  }
}
