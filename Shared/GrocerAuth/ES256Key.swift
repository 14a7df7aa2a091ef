import COpenSSL
import Foundation

/// An ECDSA P-256 private key that makes ES256 signatures (RFC 7518 §3.4), such as the `.p8`
/// token-signing key Apple issues for APNs.
///
/// Safe to share between threads: the `EVP_PKEY` is never modified after loading, and each
/// signature runs in its own digest context (libcrypto allows concurrent read-only use of a key).
public final class ES256Key: @unchecked Sendable {
  private let key: OpaquePointer

  /// The matching public key.
  public let publicKey: ES256PublicKey

  /// Loads a PEM private key: PKCS#8 (`-----BEGIN PRIVATE KEY-----`, the content of Apple's `.p8`
  /// file) or SEC 1 (`-----BEGIN EC PRIVATE KEY-----`). It must be an unencrypted P-256 key.
  public convenience init(pem: String) throws(ES256KeyError) {
    try self.init(owning: LibcryptoKeys.readPrivateKey(pem: pem))
  }

  /// Loads a PEM private key from a file (e.g. `AuthKey_<key id>.p8`), as `init(pem:)` does.
  public convenience init(contentsOfFile path: String) throws(ES256KeyError) {
    let text: String
    do {
      text = try String(contentsOfFile: path, encoding: .utf8)
    } catch {
      throw .unreadableFile(path: path, reason: (error as NSError).localizedDescription)
    }
    try self.init(pem: text)
  }

  /// A new random P-256 key: for tests, and for running against the APNs simulator without a key
  /// from Apple.
  public static func generate() throws(ES256KeyError) -> ES256Key {
    guard let key = LibcryptoKeys.generateP256() else {
      throw .libcryptoFailure("P-256 key generation failed")
    }
    return try ES256Key(owning: key)
  }

  /// Takes ownership of `key`, a checked P-256 private key.
  private init(owning key: OpaquePointer) throws(ES256KeyError) {
    guard let publicHalf = LibcryptoKeys.publicHalf(of: key) else {
      EVP_PKEY_free(key)
      throw .libcryptoFailure(LibcryptoKeys.drainErrors())
    }
    self.key = key
    self.publicKey = ES256PublicKey(owning: publicHalf)
  }

  deinit { EVP_PKEY_free(key) }

  /// The key as unencrypted PKCS#8 PEM (`-----BEGIN PRIVATE KEY-----`), the `.p8` format.
  public var pemRepresentation: String {
    guard let pem = LibcryptoKeys.privateKeyPEM(key) else {
      fatalError("libcrypto cannot encode a P-256 key")
    }
    return pem
  }

  /// The ES256 signature of `message` (ECDSA P-256 over its SHA-256 digest) in JWS form: `r || s`,
  /// each left-padded to 32 bytes, always 64 bytes. ECDSA is randomised, so two signatures of one
  /// message differ; both verify.
  public func sign(_ message: [UInt8]) -> [UInt8] {
    guard let der = LibcryptoKeys.signDER(key, message), let raw = ECDSASignature.raw(fromDER: der) else {
      // Only a broken libcrypto or exhausted memory gets here; a loaded P-256 key always signs.
      fatalError("libcrypto failed to make an ES256 signature")
    }
    return raw
  }
}
