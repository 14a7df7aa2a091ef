/// A hub id such as `h1`. Plain `String` so the hot path never wraps or unwraps; validated with
/// `Identifier.isValid` wherever one enters from outside.
public typealias HubID = String

/// A product id such as `p00001`, unique within a hub. Same rule as `HubID`.
public typealias SKU = String

/// The rule for hub ids, SKUs and order ids: 1–64 characters of `[A-Za-z0-9._-]`.
///
/// Kept this tight so ids are safe in paths, routing keys, event subjects (`hub/sku`) and log
/// lines without escaping.
public enum Identifier {
  @inlinable public static var maximumLength: Int { 64 }

  public static func isValid(_ id: String) -> Bool {
    var count = 0
    for byte in id.utf8 {
      count += 1
      guard count <= maximumLength, isAllowed(byte) else { return false }
    }
    return count > 0
  }

  /// Inlined where it is called (a stock lookup checks every byte of its ids).
  @inlinable @inline(__always)
  public static func isAllowed(_ byte: UInt8) -> Bool {
    switch byte {
    case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
      UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "-"):
      true
    default: false
    }
  }
}
