import Foundation
import GrocerContracts
import GrocerCore

/// The bytes and headers of one stock reply.
public struct StockReply: Hashable, Sendable {
  /// `{"asOf":"2026-10-20T18:42:00Z","stock":{"p1":12,"p2":0}}`, keys in request order.
  public var body: [UInt8]
  /// When the oldest entry in the reply was read.
  public var asOf: Date
  /// For `Cache-Control: max-age=`: whole seconds of freshness left, ≥ 0.
  public var maxAge: Int
}

/// Writes stock replies by hand into `[UInt8]`: on the hot path a `JSONEncoder` would cost
/// more than the rest of the request.
public enum StockReplyWriter {
  /// The reply for a lookup with no misses left (misses still pending are left out).
  ///
  /// `asOf` is the oldest read time among the entries consulted, counts *and* unknowns (an
  /// SKU left out is a claim as old as its entry); with nothing consulted, `now`.
  /// `maxAge` = ⌊timeToLive − (now − asOf)⌋, at least 0.
  public static func reply(skus: [SKU], lookup: StockLookup, now: Date, timeToLive: TimeInterval)
    -> StockReply
  {
    let oldest = lookup.oldestReadAt.isFinite ? lookup.oldestReadAt : now.timeIntervalSinceReferenceDate
    let asOf = Date(timeIntervalSinceReferenceDate: oldest)
    let remaining = timeToLive - (now.timeIntervalSinceReferenceDate - oldest)
    let maxAge = remaining.isFinite && remaining > 0 ? Int(remaining.rounded(.down)) : 0
    var head: [UInt8] = []
    head.reserveCapacity(48)
    head.append(contentsOf: #"{"asOf":""#.utf8)
    appendTimestamp(asOf, to: &head)
    head.append(contentsOf: #"","stock":{"#.utf8)
    // Written straight into the reply's memory (an append per byte cost more than the lookup),
    // sized for the worst case: every byte of an id escaped as `\u00XX`.
    var bound = head.count + 2
    for sku in skus { bound += sku.utf8.count * 6 + 4 + 20 }
    let body = [UInt8](unsafeUninitializedCapacity: bound) { buffer, written in
      var at = buffer.initialize(fromContentsOf: head)
      for index in skus.indices {
        let count = lookup.counts[index]
        guard count >= 0 else { continue }
        if at > head.count {
          buffer[at] = UInt8(ascii: ",")
          at += 1
        }
        at = writeString(skus[index], into: buffer, at: at)
        buffer[at] = UInt8(ascii: ":")
        at += 1
        at = writeDigits(UInt(count), into: buffer, at: at)
      }
      buffer[at] = UInt8(ascii: "}")
      buffer[at + 1] = UInt8(ascii: "}")
      written = at + 2
    }
    return StockReply(body: body, asOf: asOf, maxAge: maxAge)
  }

  /// Appends `text` as a JSON string literal: `"` and `\` escaped, control characters as
  /// `\u00XX`, everything else (UTF-8) as is.
  public static func appendString(_ text: String, to body: inout [UInt8]) {
    body.append(
      contentsOf: [UInt8](unsafeUninitializedCapacity: text.utf8.count * 6 + 2) { buffer, written in
        written = writeString(text, into: buffer, at: 0)
      })
  }

  /// Writes `text` as `appendString` does at `at` (room for every byte escaped, and the quotes);
  /// returns where it ends.
  static func writeString(_ text: String, into buffer: UnsafeMutableBufferPointer<UInt8>, at start: Int)
    -> Int
  {
    var at = start
    buffer[at] = UInt8(ascii: "\"")
    at += 1
    for byte in text.utf8 {
      switch byte {
      case UInt8(ascii: "\""), UInt8(ascii: "\\"):
        buffer[at] = UInt8(ascii: "\\")
        buffer[at + 1] = byte
        at += 2
      case 0..<0x20:
        buffer[at] = UInt8(ascii: "\\")
        buffer[at + 1] = UInt8(ascii: "u")
        buffer[at + 2] = UInt8(ascii: "0")
        buffer[at + 3] = UInt8(ascii: "0")
        buffer[at + 4] = hexDigit(byte >> 4)
        buffer[at + 5] = hexDigit(byte & 0x0F)
        at += 6
      default:
        buffer[at] = byte
        at += 1
      }
    }
    buffer[at] = UInt8(ascii: "\"")
    return at + 1
  }

  /// Writes the decimal digits of `value` at `at`; returns where they end.
  static func writeDigits(_ value: UInt, into buffer: UnsafeMutableBufferPointer<UInt8>, at: Int) -> Int {
    var digits = 1
    var rest = value / 10
    while rest > 0 {
      digits += 1
      rest /= 10
    }
    var magnitude = value
    var index = at + digits - 1
    repeat {
      buffer[index] = UInt8(ascii: "0") + UInt8(magnitude % 10)
      magnitude /= 10
      index -= 1
    } while magnitude > 0
    return at + digits
  }

  /// Appends the decimal digits of `value`.
  public static func appendInteger(_ value: Int, to body: inout [UInt8]) {
    if value < 0 { body.append(UInt8(ascii: "-")) }
    body.append(
      contentsOf: [UInt8](unsafeUninitializedCapacity: 20) { buffer, written in
        written = writeDigits(value.magnitude, into: buffer, at: 0)
      })
  }

  /// Appends `date` as RFC 3339 UTC with whole seconds, without building a `String`.
  public static func appendTimestamp(_ date: Date, to body: inout [UInt8]) {
    Timestamp.append(date, to: &body)
  }

  private static func hexDigit(_ nibble: UInt8) -> UInt8 {
    nibble < 10 ? UInt8(ascii: "0") + nibble : UInt8(ascii: "a") + nibble - 10
  }
}
