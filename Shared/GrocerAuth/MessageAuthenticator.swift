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
}
