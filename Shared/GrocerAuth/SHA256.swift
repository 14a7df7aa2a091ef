import COpenSSL

/// SHA-256 digests by libcrypto (request fingerprints, derived keys).
public enum SHA256 {
  /// The 32-byte digest of `bytes`.
  public static func digest(_ bytes: [UInt8]) -> [UInt8] {
    var out = [UInt8](repeating: 0, count: 32)
    var length: UInt32 = 0
    let ok = bytes.withUnsafeBufferPointer { input in
      out.withUnsafeMutableBufferPointer { output in
        EVP_Digest(input.baseAddress, input.count, output.baseAddress, &length, EVP_sha256(), nil) == 1
      }
    }
    precondition(ok && length == 32, "libcrypto provides no SHA-256")
    return out
  }

  /// The digest as 64 lowercase hex digits.
  public static func hex(_ bytes: [UInt8]) -> String { Hex.encode(digest(bytes)) }
}

/// Lowercase hexadecimal.
public enum Hex {
  public static func encode(_ bytes: [UInt8]) -> String {
    let digits = Array("0123456789abcdef".utf8)
    var out = [UInt8]()
    out.reserveCapacity(bytes.count * 2)
    for byte in bytes {
      out.append(digits[Int(byte >> 4)])
      out.append(digits[Int(byte & 0x0F)])
    }
    return String(decoding: out, as: UTF8.self)
  }

  /// Nil unless `text` is an even number of hex digits (either case).
  public static func decode(_ text: some StringProtocol) -> [UInt8]? {
    let chars = Array(text.utf8)
    guard chars.count.isMultiple(of: 2) else { return nil }
    func value(_ c: UInt8) -> UInt8? {
      switch c {
      case UInt8(ascii: "0")...UInt8(ascii: "9"): c - UInt8(ascii: "0")
      case UInt8(ascii: "a")...UInt8(ascii: "f"): c - UInt8(ascii: "a") + 10
      case UInt8(ascii: "A")...UInt8(ascii: "F"): c - UInt8(ascii: "A") + 10
      default: nil
      }
    }
    var out = [UInt8]()
    out.reserveCapacity(chars.count / 2)
    var index = 0
    while index < chars.count {
      guard let high = value(chars[index]), let low = value(chars[index + 1]) else { return nil }
      out.append(high << 4 | low)
      index += 2
    }
    return out
  }
}
