import Foundation

/// JSON written by hand into bytes, for replies and events on hot paths where `JSONEncoder`
/// costs several times more (Benchmarks/codecs says which).
///
/// The caller writes keys in sorted order, so the output is byte for byte what
/// `JSON.encoder()` (sorted keys, RFC 3339 dates, unescaped slashes) writes for the same value;
/// tests compare the two.
public struct JSONBytes: Sendable {
  public private(set) var bytes: [UInt8] = []
  private var needsComma = false

  public init(capacity: Int = 512) { bytes.reserveCapacity(capacity) }

  public mutating func beginObject() {
    separate()
    bytes.append(UInt8(ascii: "{"))
    needsComma = false
  }

  public mutating func endObject() {
    bytes.append(UInt8(ascii: "}"))
    needsComma = true
  }

  public mutating func beginArray() {
    separate()
    bytes.append(UInt8(ascii: "["))
    needsComma = false
  }

  public mutating func endArray() {
    bytes.append(UInt8(ascii: "]"))
    needsComma = true
  }

  /// `"key":` — the value follows with one of the value methods.
  public mutating func key(_ key: String) {
    separate()
    appendString(key)
    bytes.append(UInt8(ascii: ":"))
    needsComma = false
  }

  public mutating func string(_ value: String) {
    separate()
    appendString(value)
    needsComma = true
  }

  public mutating func int(_ value: Int) {
    separate()
    if value < 0 { bytes.append(UInt8(ascii: "-")) }
    var magnitude = value.magnitude
    var digits: (UInt64, UInt64, UInt64) = (0, 0, 0)  // 24 bytes: room for 20 digits
    var count = 0
    withUnsafeMutableBytes(of: &digits) { buffer in
      repeat {
        buffer[23 - count] = UInt8(ascii: "0") + UInt8(magnitude % 10)
        magnitude /= 10
        count += 1
      } while magnitude > 0
      bytes.append(contentsOf: buffer[(24 - count)...])
    }
    needsComma = true
  }

  public mutating func int(_ value: Int64) { int(Int(value)) }

  /// A finite number as `JSONEncoder` writes it: the shortest text that reads back the same,
  /// without a trailing `.0` (`13`, `52.5001`, `1e-05`). Not finite (no JSON for it): `null`.
  public mutating func double(_ value: Double) {
    guard value.isFinite else { return null() }
    separate()
    var text = value.description
    if text.hasSuffix(".0") { text.removeLast(2) }
    bytes.append(contentsOf: text.utf8)
    needsComma = true
  }

  public mutating func bool(_ value: Bool) {
    separate()
    bytes.append(contentsOf: (value ? "true" : "false").utf8)
    needsComma = true
  }

  /// A value that is JSON already (a payload encoded elsewhere).
  public mutating func json(_ encoded: some Sequence<UInt8>) {
    separate()
    bytes.append(contentsOf: encoded)
    needsComma = true
  }

  public mutating func null() {
    separate()
    bytes.append(contentsOf: "null".utf8)
    needsComma = true
  }

  public mutating func date(_ value: Date) {
    separate()
    bytes.append(UInt8(ascii: "\""))
    Timestamp.append(value, to: &bytes)
    bytes.append(UInt8(ascii: "\""))
    needsComma = true
  }

  /// `{"currency":"EUR","minorUnits":129}`.
  public mutating func money(_ value: Money) {
    separate()
    bytes.append(contentsOf: Self.moneyOpening)
    appendString(value.currency)
    bytes.append(contentsOf: Self.moneyMiddle)
    needsComma = false
    int(value.minorUnits)
    bytes.append(UInt8(ascii: "}"))
    needsComma = true
  }

  private static let moneyOpening = Array(#"{"currency":"#.utf8)
  private static let moneyMiddle = Array(#","minorUnits":"#.utf8)

  private mutating func separate() {
    if needsComma { bytes.append(UInt8(ascii: ",")) }
  }

  /// A JSON string literal escaped the way `JSONEncoder` escapes (quote, backslash, control
  /// characters; `/` left as is).
  private mutating func appendString(_ text: String) {
    bytes.append(UInt8(ascii: "\""))
    var text = text
    let plain = text.withUTF8 { utf8 -> Bool in
      // Scan the contiguous bytes: most strings need no escaping and are copied in one go.
      guard !utf8.contains(where: { $0 < 0x20 || $0 == UInt8(ascii: "\"") || $0 == UInt8(ascii: "\\") })
      else { return false }
      bytes.append(contentsOf: utf8)
      return true
    }
    if plain {
      bytes.append(UInt8(ascii: "\""))
      return
    }
    for byte in text.utf8 {
      switch byte {
      case UInt8(ascii: "\""): bytes.append(contentsOf: [92, 34])
      case UInt8(ascii: "\\"): bytes.append(contentsOf: [92, 92])
      case 0x0A: bytes.append(contentsOf: [92, UInt8(ascii: "n")])
      case 0x0D: bytes.append(contentsOf: [92, UInt8(ascii: "r")])
      case 0x09: bytes.append(contentsOf: [92, UInt8(ascii: "t")])
      case 0x08: bytes.append(contentsOf: [92, UInt8(ascii: "b")])
      case 0x0C: bytes.append(contentsOf: [92, UInt8(ascii: "f")])
      case 0..<0x20:
        let hex = Array("0123456789abcdef".utf8)
        bytes.append(contentsOf: [92, UInt8(ascii: "u"), 48, 48, hex[Int(byte >> 4)], hex[Int(byte & 15)]])
      default: bytes.append(byte)
      }
    }
    bytes.append(UInt8(ascii: "\""))
  }
}
