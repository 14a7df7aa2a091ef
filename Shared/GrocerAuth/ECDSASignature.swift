import COpenSSL

/// Converts ECDSA P-256 signatures between the two encodings in use.
///
/// libcrypto produces and expects DER (`SEQUENCE { INTEGER r, INTEGER s }`, 70–72 bytes, with
/// leading zeros stripped and a zero added before a high bit). JWS ES256 (RFC 7518 §3.4) uses the
/// raw form instead: `r` and `s` as 32-byte big-endian numbers, left-padded, concatenated — always
/// 64 bytes. Sending DER in a JWT is the classic ES256 interoperability bug.
enum ECDSASignature {
  /// The length of `r` and of `s` in the raw form, in bytes.
  static let scalarLength = 32
  /// The length of a raw ES256 signature.
  static let rawLength = 2 * scalarLength

  /// The raw `r || s` form of a DER signature, or nil when `der` is not exactly one well-formed
  /// signature or a scalar does not fit in 32 bytes.
  static func raw(fromDER der: [UInt8]) -> [UInt8]? {
    guard !der.isEmpty else { return nil }
    let parsed = der.withUnsafeBufferPointer { buffer -> (OpaquePointer, Int)? in
      var cursor = buffer.baseAddress
      guard let signature = d2i_ECDSA_SIG(nil, &cursor, buffer.count), let cursor else { return nil }
      return (signature, cursor - buffer.baseAddress!)
    }
    guard let (signature, consumed) = parsed else {
      ERR_clear_error()
      return nil
    }
    defer { ECDSA_SIG_free(signature) }
    guard consumed == der.count else { return nil }
    var r: OpaquePointer?
    var s: OpaquePointer?
    ECDSA_SIG_get0(signature, &r, &s)
    guard let r, let s else { return nil }
    var raw = [UInt8](repeating: 0, count: rawLength)
    let fits = raw.withUnsafeMutableBufferPointer { out in
      BN_bn2binpad(r, out.baseAddress, Int32(scalarLength)) == Int32(scalarLength)
        && BN_bn2binpad(s, out.baseAddress! + scalarLength, Int32(scalarLength)) == Int32(scalarLength)
    }
    return fits ? raw : nil
  }

  /// The DER form of a raw `r || s` signature, or nil unless `raw` is exactly 64 bytes.
  static func der(fromRaw raw: [UInt8]) -> [UInt8]? {
    guard raw.count == rawLength, let signature = ECDSA_SIG_new() else { return nil }
    defer { ECDSA_SIG_free(signature) }
    let (r, s) = raw.withUnsafeBufferPointer { bytes in
      (
        BN_bin2bn(bytes.baseAddress, Int32(scalarLength), nil),
        BN_bin2bn(bytes.baseAddress! + scalarLength, Int32(scalarLength), nil)
      )
    }
    guard let r, let s, ECDSA_SIG_set0(signature, r, s) == 1 else {
      BN_free(r)
      BN_free(s)
      return nil
    }
    let length = i2d_ECDSA_SIG(signature, nil)
    guard length > 0 else { return nil }
    var der = [UInt8](repeating: 0, count: Int(length))
    let written = der.withUnsafeMutableBufferPointer { buffer -> Int32 in
      var cursor = buffer.baseAddress
      return i2d_ECDSA_SIG(signature, &cursor)
    }
    return written == length ? der : nil
  }
}
