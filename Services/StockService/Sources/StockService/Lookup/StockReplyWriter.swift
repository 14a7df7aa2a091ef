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
    var body: [UInt8] = []
    body.reserveCapacity(40 + skus.count * 16)
    body.append(contentsOf: #"{"asOf":""#.utf8)
    appendTimestamp(asOf, to: &body)
    body.append(contentsOf: #"","stock":{"#.utf8)
    var first = true
    for index in skus.indices {
      let count = lookup.counts[index]
      guard count >= 0 else { continue }
      if !first { body.append(UInt8(ascii: ",")) }
      first = false
      appendString(skus[index], to: &body)
      body.append(UInt8(ascii: ":"))
      appendInteger(count, to: &body)
    }
    body.append(contentsOf: "}}".utf8)
    return StockReply(body: body, asOf: asOf, maxAge: maxAge)
  }

  /// Appends `text` as a JSON string literal: `"` and `\` escaped, control characters as
  /// `\u00XX`, everything else (UTF-8) as is.
  public static func appendString(_ text: String, to body: inout [UInt8]) {
    body.append(UInt8(ascii: "\""))
    for byte in text.utf8 {
      switch byte {
      case UInt8(ascii: "\""), UInt8(ascii: "\\"):
        body.append(UInt8(ascii: "\\"))
        body.append(byte)
      case 0..<0x20:
        body.append(contentsOf: #"\u00"#.utf8)
        body.append(hexDigit(byte >> 4))
        body.append(hexDigit(byte & 0x0F))
      default:
        body.append(byte)
      }
    }
    body.append(UInt8(ascii: "\""))
  }

  /// Appends the decimal digits of `value`.
  public static func appendInteger(_ value: Int, to body: inout [UInt8]) {
    if value < 0 { body.append(UInt8(ascii: "-")) }
    var magnitude = value.magnitude
    if magnitude < 10 {
      body.append(UInt8(ascii: "0") + UInt8(magnitude))
      return
    }
    let start = body.count
    while magnitude > 0 {
      body.append(UInt8(ascii: "0") + UInt8(magnitude % 10))
      magnitude /= 10
    }
    body[start...].reverse()
  }

  /// Appends `date` as RFC 3339 UTC with whole seconds, without building a `String`.
  public static func appendTimestamp(_ date: Date, to body: inout [UInt8]) {
    Timestamp.append(date, to: &body)
  }

  private static func hexDigit(_ nibble: UInt8) -> UInt8 {
    nibble < 10 ? UInt8(ascii: "0") + nibble : UInt8(ascii: "a") + nibble - 10
  }
}
