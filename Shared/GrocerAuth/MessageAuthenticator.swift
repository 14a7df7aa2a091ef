import COpenSSL

/// HMAC-SHA256 tags for values this service hands out and must recognise when they come back
/// (the catalogue's page cursors), under a key derived from a shared secret and a purpose, so
/// the tags of one purpose are worth nothing for another or as a token signature.
public struct MessageAuthenticator: Sendable {
  private let mac: HMACSHA256

  /// - Precondition: `secret` is not empty.
  public init(secret: String, purpose: String) {
    precondition(!secret.isEmpty, "a secret must not be empty")
    guard let root = HMACSHA256(key: Array(secret.utf8)) else {
      fatalError("libcrypto provides no HMAC-SHA256")
    }
    let derived = root.authenticationCode(for: Array(purpose.utf8))
    guard let mac = HMACSHA256(key: derived) else { fatalError("libcrypto provides no HMAC-SHA256") }
    self.mac = mac
  }

  /// The 32-byte tag of `message`.
  public func tag(_ message: [UInt8]) -> [UInt8] { mac.authenticationCode(for: message) }

  /// How many bytes of the tag a sealed value carries.
  public static let sealedTagLength = 16

  /// `message` as `base64url(message) "." base64url(tag)`, the tag cut to 16 bytes: a value its
  /// holder can hand back but not alter.
  public func seal(_ message: [UInt8]) -> String {
    Base64URL.encode(message) + "." + Base64URL.encode(tag(message).prefix(Self.sealedTagLength))
  }

  /// The message `sealed` holds if this authenticator sealed it (tags compared in constant
  /// time), else nil; nil too past `maximumLength` bytes.
  public func open(_ sealed: String, maximumLength: Int = 1024) -> [UInt8]? {
    guard sealed.utf8.count <= maximumLength else { return nil }
    let parts = sealed.split(separator: ".", omittingEmptySubsequences: false)
    guard parts.count == 2, !parts[0].isEmpty, let message = Base64URL.decode(String(parts[0])),
      let presented = Base64URL.decode(String(parts[1])), presented.count == Self.sealedTagLength
    else { return nil }
    let expected = Array(tag(message).prefix(Self.sealedTagLength))
    let equal = expected.withUnsafeBytes { lhs in
      presented.withUnsafeBytes { rhs in
        CRYPTO_memcmp(lhs.baseAddress, rhs.baseAddress, Self.sealedTagLength) == 0
      }
    }
    return equal ? message : nil
  }
}
