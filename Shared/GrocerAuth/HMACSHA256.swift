import COpenSSL

/// HMAC-SHA256 with one key, computed by libcrypto (the only file that imports OpenSSL).
///
/// The key is loaded once into a template `EVP_MAC_CTX`; each call duplicates that context
/// instead of fetching the algorithm and hashing the key again, which is most of the cost of
/// the one-shot `HMAC()` for token-sized inputs. The template is never mutated after `init`, and
/// `EVP_MAC_CTX_dup` only reads it, so one instance may be used from any number of threads.
final class HMACSHA256: @unchecked Sendable {
  /// The length of an HMAC-SHA256 tag in bytes.
  static let outputLength = 32

  private let template: OpaquePointer

  /// Returns nil only if libcrypto cannot provide HMAC-SHA256 (a broken installation).
  init?(key: [UInt8]) {
    guard let mac = EVP_MAC_fetch(nil, "HMAC", nil) else { return nil }
    defer { EVP_MAC_free(mac) }
    guard let context = EVP_MAC_CTX_new(mac) else { return nil }
    let initialised = "SHA256".withCString { digestName -> Bool in
      var params = [
        OSSL_PARAM_construct_utf8_string("digest", UnsafeMutablePointer(mutating: digestName), 0),
        OSSL_PARAM_construct_end(),
      ]
      // An empty key still needs a valid pointer, hence one byte of storage and a length of 0.
      let storage = key.isEmpty ? [0] : key
      return storage.withUnsafeBufferPointer { keyBytes in
        EVP_MAC_init(context, keyBytes.baseAddress, key.count, &params) == 1
      }
    }
    guard initialised else {
      EVP_MAC_CTX_free(context)
      return nil
    }
    template = context
  }

  deinit { EVP_MAC_CTX_free(template) }

  /// The 32-byte tag of `message`.
  func authenticationCode(for message: UnsafeRawBufferPointer) -> [UInt8] {
    var tag = [UInt8](repeating: 0, count: Self.outputLength)
    guard let context = EVP_MAC_CTX_dup(template) else { return [] }
    defer { EVP_MAC_CTX_free(context) }
    var length = 0
    let ok = tag.withUnsafeMutableBufferPointer { out in
      EVP_MAC_update(context, message.baseAddress?.assumingMemoryBound(to: UInt8.self), message.count) == 1
        && EVP_MAC_final(context, out.baseAddress, &length, out.count) == 1
    }
    return ok && length == Self.outputLength ? tag : []
  }

  func authenticationCode(for message: [UInt8]) -> [UInt8] {
    message.withUnsafeBytes { authenticationCode(for: $0) }
  }

  /// Compares two tags in constant time (`CRYPTO_memcmp`), so the time taken says nothing about
  /// how many leading bytes of a forged signature were right.
  static func tagsMatch(_ expected: [UInt8], _ presented: UnsafeRawBufferPointer) -> Bool {
    guard expected.count == outputLength, presented.count == outputLength else { return false }
    return expected.withUnsafeBytes {
      CRYPTO_memcmp($0.baseAddress, presented.baseAddress, outputLength) == 0
    }
  }
}
