import Foundation
import GrocerCore

@testable import GrocerAuth

/// Keys, encodings and hand-made tokens for the ES256 and APNs tests. The DER and PEM here are
/// written out byte by byte, independently of libcrypto's encoders, so the tests compare our code
/// against the standards rather than against itself.
enum ES256Fixtures {
  static let start = Date(timeIntervalSince1970: 1_790_000_000)
  static let keyID = "ABC123DEFG"
  static let teamID = "DEF123GHIJ"

  /// The P-256 group order n: every valid `r` and `s` is in 1..<n.
  static let curveOrder = [UInt8](hex: "ffffffff00000000ffffffffffffffffbce6faada7179e84f3b9cac2fc632551")

  // MARK: RFC 7515 Appendix A.3 (an ES256 JWS made by another implementation)

  static let rfcX = Base64URL.decode("f83OJ3D2xF1Bg8vub9tLe1gHMzV76e8Tus9uPHvRVEU")!
  static let rfcY = Base64URL.decode("x_FEzRu9m36HLN_tue659LNpXW6pCyStikYjKIWI5a0")!
  static let rfcD = Base64URL.decode("jpsQnnGQmL-YBIffH1136cspYG6-0iY7X1fCE9-E9LI")!
  static let rfcSigningInput =
    "eyJhbGciOiJFUzI1NiJ9.eyJpc3MiOiJqb2UiLA0KICJleHAiOjEzMDA4MTkzODAsDQogImh0dHA6Ly9leGFtcGxlLmNvbS9pc19yb290Ijp0cnVlfQ"
  static let rfcSignature = Base64URL.decode(
    "DtEhU3ljbEg8L38VWAfUAqOyKAM6-Xx-F4GawxaepmXFCgfTjDxw5djxLa8ISlSApmWQxfKTUJqPP3-Kg6NU1Q")!

  // MARK: Hand-built DER

  /// SubjectPublicKeyInfo for a P-256 point (RFC 5480): id-ecPublicKey, prime256v1, 04 || x || y.
  static func publicKeyDER(x: [UInt8], y: [UInt8]) -> [UInt8] {
    [UInt8](hex: "3059301306072a8648ce3d020106082a8648ce3d03010703420004") + x + y
  }

  /// PKCS#8 PrivateKeyInfo for a P-256 scalar (RFC 5208 + RFC 5915), without the optional
  /// public key, as Apple's `.p8` files are laid out.
  static func p256PrivateKeyDER(d: [UInt8]) -> [UInt8] {
    [UInt8](hex: "3041020100301306072a8648ce3d020106082a8648ce3d030107042730250201010420") + d
  }

  /// PKCS#8 for a P-384 scalar (secp384r1): a valid EC key on the wrong curve.
  static let p384PrivateKeyDER =
    [UInt8](hex: "304e020100301006072a8648ce3d020106052b81040022043730350201010430")
    + [UInt8](repeating: 0x11, count: 48)

  /// PKCS#8 for an Ed25519 key (RFC 8410): not an EC key at all.
  static let ed25519PrivateKeyDER =
    [UInt8](hex: "302e020100300506032b657004220420") + [UInt8](repeating: 0x22, count: 32)

  /// `der` wrapped as PEM with 64-character lines.
  static func pem(_ label: String, _ der: [UInt8]) -> String {
    let base64 = Array(Data(der).base64EncodedString().utf8)
    var lines = ["-----BEGIN \(label)-----"]
    var index = 0
    while index < base64.count {
      let end = min(index + 64, base64.count)
      lines.append(String(decoding: base64[index..<end], as: UTF8.self))
      index = end
    }
    lines.append("-----END \(label)-----")
    return lines.joined(separator: "\n") + "\n"
  }

  /// DER `SEQUENCE { INTEGER r, INTEGER s }` from a raw 64-byte signature (X.690: minimal
  /// length, a zero byte in front of a set high bit).
  static func derSignature(raw: [UInt8]) -> [UInt8] {
    func integer(_ bytes: ArraySlice<UInt8>) -> [UInt8] {
      var value = Array(bytes.drop(while: { $0 == 0 }))
      if value.isEmpty { value = [0] }
      if value[0] & 0x80 != 0 { value.insert(0, at: 0) }
      return [0x02, UInt8(value.count)] + value
    }
    let body = integer(raw[0..<32]) + integer(raw[32..<64])
    return [0x30, UInt8(body.count)] + body
  }

  /// Whether the big-endian `value` is less than the big-endian `bound` of the same length.
  static func isLess(_ value: ArraySlice<UInt8>, than bound: [UInt8]) -> Bool {
    for (a, b) in zip(value, bound) where a != b { return a < b }
    return false
  }

  // MARK: Tokens

  /// A compact JWS of `header` and `payload` (JSON text), ES256-signed with `key`.
  static func token(header: String, payload: String, key: ES256Key) -> String {
    let signingInput = Base64URL.encode(header) + "." + Base64URL.encode(payload)
    return signingInput + "." + Base64URL.encode(key.sign(Array(signingInput.utf8)))
  }

  static func appleHeader(kid: String = keyID, alg: String = "ES256") -> String {
    #"{"alg":""# + alg + #"","kid":""# + kid + #""}"#
  }

  static func appleClaims(iss: String = teamID, iat: Date = start) -> String {
    #"{"iss":""# + iss + #"","iat":"# + String(Int(iat.timeIntervalSince1970)) + "}"
  }

  /// The decoded header and claims of a compact token, as text.
  static func decodedParts(_ token: String) -> (header: String, claims: String, signature: [UInt8])? {
    let parts = token.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
    guard parts.count == 3, let header = Base64URL.decode(parts[0]), let claims = Base64URL.decode(parts[1]),
      let signature = Base64URL.decode(parts[2])
    else { return nil }
    return (String(decoding: header, as: UTF8.self), String(decoding: claims, as: UTF8.self), signature)
  }

  static func signingInput(of token: String) -> [UInt8] {
    Array(token[..<token.lastIndex(of: ".")!].utf8)
  }
}
