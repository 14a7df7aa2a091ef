/// Base64url without padding (RFC 4648 §5), the encoding of every JWT part (RFC 7515 §2).
///
/// Written by hand rather than through `Data(base64Encoded:)` because it runs on every
/// authenticated request and must refuse, not repair, anything that is not canonical: padding,
/// characters outside the alphabet, an impossible length or stray low bits in the last character.
enum Base64URL {
  private static let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)

  /// The 6-bit value of `byte`, or 0xFF for a byte outside the alphabet. A switch rather than a
  /// lookup table: a static table costs a `swift_once` check per byte in the hot loop.
  @inline(__always)
  private static func value(of byte: UInt8) -> UInt8 {
    switch byte {
    case UInt8(ascii: "A")...UInt8(ascii: "Z"): byte &- UInt8(ascii: "A")
    case UInt8(ascii: "a")...UInt8(ascii: "z"): byte &- UInt8(ascii: "a") &+ 26
    case UInt8(ascii: "0")...UInt8(ascii: "9"): byte &- UInt8(ascii: "0") &+ 52
    case UInt8(ascii: "-"): 62
    case UInt8(ascii: "_"): 63
    default: 0xFF
    }
  }

  static func encode<Bytes: Collection>(_ bytes: Bytes) -> String where Bytes.Element == UInt8 {
    var output = [UInt8]()
    output.reserveCapacity((bytes.count * 4 + 2) / 3)
    var iterator = bytes.makeIterator()
    while let first = iterator.next() {
      let second = iterator.next()
      let third = iterator.next()
      output.append(alphabet[Int(first >> 2)])
      output.append(alphabet[Int((first & 0x03) << 4 | (second ?? 0) >> 4)])
      guard let second else { break }
      output.append(alphabet[Int((second & 0x0F) << 2 | (third ?? 0) >> 6)])
      guard let third else { break }
      output.append(alphabet[Int(third & 0x3F)])
    }
    return String(decoding: output, as: UTF8.self)
  }

  static func encode(_ text: String) -> String { encode(Array(text.utf8)) }

  /// Decodes canonical unpadded base64url, or returns nil.
  static func decode(_ encoded: UnsafeBufferPointer<UInt8>) -> [UInt8]? {
    let remainder = encoded.count % 4
    if remainder == 1 { return nil }
    var output = [UInt8]()
    output.reserveCapacity(encoded.count / 4 * 3 + 2)
    var accumulator: UInt32 = 0
    var bits = 0
    for byte in encoded {
      let value = value(of: byte)
      if value == 0xFF { return nil }
      accumulator = accumulator << 6 | UInt32(value)
      bits += 6
      if bits >= 8 {
        bits -= 8
        output.append(UInt8(truncatingIfNeeded: accumulator >> UInt32(bits)))
        accumulator &= (1 << UInt32(bits)) - 1
      }
    }
    // Left-over bits must be zero, or two different strings would decode to the same bytes.
    if accumulator != 0 { return nil }
    return output
  }

  static func decode(_ encoded: String) -> [UInt8]? {
    var encoded = encoded
    return encoded.withUTF8 { decode($0) }
  }
}
