/// Mints HS256 tokens: for local development (`grocer-token`) and tests, never a production
/// identity provider.
public struct HS256Signer: Sendable {
  /// `{"alg":"HS256","typ":"JWT"}`, base64url-encoded once.
  private static let encodedHeader = Base64URL.encode("{\"alg\":\"HS256\",\"typ\":\"JWT\"}")

  private let mac: HMACSHA256

  /// - Precondition: `secret` is not empty.
  public init(secret: String) {
    self.init(secretBytes: Array(secret.utf8))
  }

  /// - Precondition: `secretBytes` is not empty.
  public init(secretBytes: [UInt8]) {
    precondition(!secretBytes.isEmpty, "an HS256 secret must not be empty")
    guard let mac = HMACSHA256(key: secretBytes) else { fatalError("libcrypto provides no HMAC-SHA256") }
    self.mac = mac
  }

  /// The compact token `header.payload.signature` for `claims`.
  public func sign(claims: TokenClaims) -> String {
    let signingInput = Self.encodedHeader + "." + Base64URL.encode(claims.json())
    return signingInput + "." + Base64URL.encode(mac.authenticationCode(for: Array(signingInput.utf8)))
  }
}
