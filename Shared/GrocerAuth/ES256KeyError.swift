/// Why an ES256 key could not be loaded.
public enum ES256KeyError: Error, Hashable, Sendable, CustomStringConvertible {
  /// The key file could not be read (path, and the system's reason).
  case unreadableFile(path: String, reason: String)
  /// No key of the expected kind could be decoded from the text (libcrypto's reason). A private
  /// key must be PEM `PRIVATE KEY` (PKCS#8, like Apple's `.p8` files) or `EC PRIVATE KEY`; a public
  /// key must be PEM `PUBLIC KEY`.
  case notAKey(String)
  /// The private key is protected by a passphrase. Apple's `.p8` keys are not, and none is taken.
  case encrypted
  /// The key is not an elliptic-curve key (its type, e.g. `RSA`).
  case notAnECKey(String)
  /// The key is on another curve than P-256 (the curve's name, e.g. `secp384r1`).
  case wrongCurve(String)
  /// libcrypto failed where it should not (no memory, a broken installation).
  case libcryptoFailure(String)

  public var description: String {
    switch self {
    case .unreadableFile(let path, let reason): "cannot read the key file \(path): \(reason)"
    case .notAKey(let reason): "no PEM key could be decoded (\(reason))"
    case .encrypted: "the private key is encrypted; an unencrypted PKCS#8 key (.p8) is needed"
    case .notAnECKey(let type): "the key is \(type), not an elliptic-curve key; ES256 needs P-256"
    case .wrongCurve(let curve): "the key is on \(curve); ES256 needs P-256 (prime256v1)"
    case .libcryptoFailure(let reason): "libcrypto failed: \(reason)"
    }
  }
}
