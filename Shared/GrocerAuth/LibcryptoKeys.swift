import COpenSSL

/// The libcrypto plumbing shared by `ES256Key` and `ES256PublicKey`: PEM in and out through memory
/// BIOs, the curve check, the one-shot digest-sign/verify calls and the thread's error queue.
///
/// Every function here takes and returns `EVP_PKEY` pointers; ownership is spelled out per function.
enum LibcryptoKeys {
  /// The curve ES256 requires (RFC 7518 §3.4), by the names libcrypto may report for it.
  static let p256Names: Set<String> = ["prime256v1", "P-256", "secp256r1"]

  /// Decodes the first private key in `pem` (PKCS#8 `PRIVATE KEY`, as in Apple's `.p8` files, or
  /// SEC 1 `EC PRIVATE KEY`) and checks it is a P-256 key. The caller owns the returned key.
  static func readPrivateKey(pem: String) throws(ES256KeyError) -> OpaquePointer {
    // The default passphrase callback would read a passphrase from the terminal; ours refuses.
    if pem.contains("-----BEGIN ENCRYPTED PRIVATE KEY-----") || pem.contains("Proc-Type: 4,ENCRYPTED") {
      throw .encrypted
    }
    let key = withMemoryBIO(pem) { bio in
      PEM_read_bio_PrivateKey(bio, nil, { _, _, _, _ in 0 }, nil)
    }
    guard let key else { throw .notAKey(drainErrors()) }
    do {
      try checkP256(key)
    } catch {
      EVP_PKEY_free(key)
      throw error
    }
    return key
  }

  /// Decodes the first `PUBLIC KEY` (SubjectPublicKeyInfo) block in `pem` and checks it is a P-256
  /// key. The caller owns the returned key.
  static func readPublicKey(pem: String) throws(ES256KeyError) -> OpaquePointer {
    let key = withMemoryBIO(pem) { bio in
      PEM_read_bio_PUBKEY(bio, nil, { _, _, _, _ in 0 }, nil)
    }
    guard let key else { throw .notAKey(drainErrors()) }
    do {
      try checkP256(key)
    } catch {
      EVP_PKEY_free(key)
      throw error
    }
    return key
  }

  /// A new key holding only the public half of `key` (re-encoded through SubjectPublicKeyInfo DER,
  /// so nothing private can travel with it). The caller owns the returned key.
  static func publicHalf(of key: OpaquePointer) -> OpaquePointer? {
    let length = i2d_PUBKEY(key, nil)
    guard length > 0 else { return nil }
    var der = [UInt8](repeating: 0, count: Int(length))
    let written = der.withUnsafeMutableBufferPointer { buffer -> Int32 in
      var cursor = buffer.baseAddress
      return i2d_PUBKEY(key, &cursor)
    }
    guard written == length else { return nil }
    return der.withUnsafeBufferPointer { buffer -> OpaquePointer? in
      var cursor = buffer.baseAddress
      return d2i_PUBKEY(nil, &cursor, Int(length))
    }
  }

  /// A fresh P-256 key pair from libcrypto's default random source. The caller owns it.
  static func generateP256() -> OpaquePointer? {
    guard let context = EVP_PKEY_CTX_new_from_name(nil, "EC", nil) else { return nil }
    defer { EVP_PKEY_CTX_free(context) }
    var key: OpaquePointer?
    guard EVP_PKEY_keygen_init(context) == 1, EVP_PKEY_CTX_set_group_name(context, "P-256") == 1,
      EVP_PKEY_generate(context, &key) == 1
    else {
      ERR_clear_error()
      return nil
    }
    return key
  }

  /// `key` as PKCS#8 `PRIVATE KEY` PEM (unencrypted), the format of Apple's `.p8` files.
  static func privateKeyPEM(_ key: OpaquePointer) -> String? {
    pemText { bio in PEM_write_bio_PrivateKey(bio, key, nil, nil, 0, nil, nil) == 1 }
  }

  /// The public half of `key` as SubjectPublicKeyInfo `PUBLIC KEY` PEM.
  static func publicKeyPEM(_ key: OpaquePointer) -> String? {
    pemText { bio in PEM_write_bio_PUBKEY(bio, key) == 1 }
  }

  /// The DER ECDSA signature of `message` with SHA-256, or nil if libcrypto fails.
  static func signDER(_ key: OpaquePointer, _ message: [UInt8]) -> [UInt8]? {
    guard let context = EVP_MD_CTX_new() else { return nil }
    defer { EVP_MD_CTX_free(context) }
    guard EVP_DigestSignInit(context, nil, EVP_sha256(), nil, key) == 1 else {
      ERR_clear_error()
      return nil
    }
    // A DER P-256 signature is at most 72 bytes; libcrypto checks the buffer is big enough.
    var signature = [UInt8](repeating: 0, count: 80)
    var length = signature.count
    let signed = withNonNullBytes(message) { bytes, count in
      signature.withUnsafeMutableBufferPointer { out in
        EVP_DigestSign(context, out.baseAddress, &length, bytes, count) == 1
      }
    }
    guard signed, length <= signature.count else {
      ERR_clear_error()
      return nil
    }
    return Array(signature[..<length])
  }

  /// Whether `derSignature` is a valid ECDSA-SHA256 signature of `message` by `key`.
  static func verifyDER(_ key: OpaquePointer, derSignature: [UInt8], message: [UInt8]) -> Bool {
    guard let context = EVP_MD_CTX_new() else { return false }
    defer { EVP_MD_CTX_free(context) }
    guard EVP_DigestVerifyInit(context, nil, EVP_sha256(), nil, key) == 1 else {
      ERR_clear_error()
      return false
    }
    let verified = withNonNullBytes(message) { bytes, count in
      derSignature.withUnsafeBufferPointer { signature in
        EVP_DigestVerify(context, signature.baseAddress, signature.count, bytes, count) == 1
      }
    }
    // A refused signature leaves an error on this thread's queue; it is an answer, not a fault.
    if !verified { ERR_clear_error() }
    return verified
  }

  // MARK: Helpers

  private static func checkP256(_ key: OpaquePointer) throws(ES256KeyError) {
    guard EVP_PKEY_is_a(key, "EC") == 1 else {
      let name = EVP_PKEY_get0_type_name(key).map { String(cString: $0) } ?? "unknown"
      throw .notAnECKey(name)
    }
    var name = [CChar](repeating: 0, count: 64)
    var length = 0
    let found = name.withUnsafeMutableBufferPointer { buffer in
      EVP_PKEY_get_group_name(key, buffer.baseAddress, buffer.count, &length) == 1
    }
    let curve =
      found ? name.withUnsafeBufferPointer { String(cString: $0.baseAddress!) } : "an explicit curve"
    guard p256Names.contains(curve) else {
      ERR_clear_error()
      throw .wrongCurve(curve)
    }
  }

  /// Runs `body` with a read-only memory BIO over the UTF-8 bytes of `text`.
  private static func withMemoryBIO<T>(_ text: String, _ body: (OpaquePointer) -> T?) -> T? {
    var bytes = Array(text.utf8)
    bytes.append(0)  // a valid pointer even for empty text
    return bytes.withUnsafeBytes { buffer -> T? in
      guard let bio = BIO_new_mem_buf(buffer.baseAddress, Int32(buffer.count - 1)) else { return nil }
      defer { BIO_free(bio) }
      return body(bio)
    }
  }

  /// What `write` puts into a fresh memory BIO, as text.
  private static func pemText(_ write: (OpaquePointer) -> Bool) -> String? {
    guard let bio = BIO_new(BIO_s_mem()) else { return nil }
    defer { BIO_free(bio) }
    guard write(bio) else {
      ERR_clear_error()
      return nil
    }
    let pending = Int(BIO_ctrl_pending(bio))
    var text = [UInt8](repeating: 0, count: pending)
    let read = text.withUnsafeMutableBytes { BIO_read(bio, $0.baseAddress, Int32(pending)) }
    guard read == pending else { return nil }
    return String(decoding: text, as: UTF8.self)
  }

  /// Calls `body` with a non-null pointer to `bytes` (an empty array has no storage, and some
  /// libcrypto entry points reject a null pointer even with a zero length).
  private static func withNonNullBytes<T>(_ bytes: [UInt8], _ body: (UnsafePointer<UInt8>, Int) -> T) -> T {
    if bytes.isEmpty {
      let zero: UInt8 = 0
      return withUnsafePointer(to: zero) { body($0, 0) }
    }
    return bytes.withUnsafeBufferPointer { body($0.baseAddress!, $0.count) }
  }

  /// The first error on this thread's libcrypto queue as text, emptying the queue.
  static func drainErrors() -> String {
    var first: String?
    while case let code = ERR_get_error(), code != 0 {
      guard first == nil else { continue }
      var text = [CChar](repeating: 0, count: 256)
      text.withUnsafeMutableBufferPointer { ERR_error_string_n(code, $0.baseAddress, $0.count) }
      first = text.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
    }
    return first ?? "libcrypto gave no reason"
  }
}
