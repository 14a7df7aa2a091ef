import COpenSSL

/// An ECDSA P-256 public key that checks ES256 signatures (RFC 7518 §3.4).
///
/// Safe to share between threads for the same reason as `ES256Key`.
public final class ES256PublicKey: @unchecked Sendable {
  private let key: OpaquePointer

  /// Loads a PEM public key (`-----BEGIN PUBLIC KEY-----`, SubjectPublicKeyInfo) on P-256.
  public convenience init(pem: String) throws(ES256KeyError) {
    self.init(owning: try LibcryptoKeys.readPublicKey(pem: pem))
  }

  /// Takes ownership of `key`, a checked P-256 key.
  init(owning key: OpaquePointer) {
    self.key = key
  }

  deinit { EVP_PKEY_free(key) }

  /// The key as PEM `-----BEGIN PUBLIC KEY-----` (SubjectPublicKeyInfo).
  public var pemRepresentation: String {
    guard let pem = LibcryptoKeys.publicKeyPEM(key) else { fatalError("libcrypto cannot encode a P-256 key") }
    return pem
  }

  /// Whether `signature`, in JWS form (64 bytes, `r || s`), is this key's ES256 signature of
  /// `message`. Any other length is refused without asking libcrypto. Not constant-time, which a
  /// public-key check does not need: nothing secret is compared.
  public func verify(signature: [UInt8], message: [UInt8]) -> Bool {
    guard let der = ECDSASignature.der(fromRaw: signature) else { return false }
    return verify(derSignature: der, message: message)
  }

  /// Whether `derSignature`, in libcrypto's DER form, is this key's signature of `message`.
  func verify(derSignature: [UInt8], message: [UInt8]) -> Bool {
    LibcryptoKeys.verifyDER(key, derSignature: derSignature, message: message)
  }
}
