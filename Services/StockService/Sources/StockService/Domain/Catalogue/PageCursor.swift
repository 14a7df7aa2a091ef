import Foundation
import GrocerContracts

/// Where a page of a list ends, handed to the app as an opaque string and taken back as
/// `cursor=`.
///
/// It is bound to its hub and its list (a category, or a search's normalised query) and signed,
/// so another hub's or list's cursor, or one changed by hand, is refused (`invalidCursor`)
/// instead of quietly paging something else. A category's position is the last SKU shown, so
/// paging while staff add or remove products never repeats or skips one that stayed; a search's
/// is the number of results shown.
public struct PageCursor: Hashable, Sendable {
  public enum List: Hashable, Sendable {
    case category(CategoryID)
    case search(String)
  }

  public var hub: HubID
  public var list: List
  public var position: String

  public init(hub: HubID, list: List, position: String) {
    self.hub = hub
    self.list = list
    self.position = position
  }
}

/// Writes and reads `PageCursor`s: `base64url(payload) "." base64url(tag)`, where the tag is a
/// MAC of the payload made by `sign` (HMAC-SHA256 with a key every replica shares, in the
/// service), cut to 16 bytes.
public struct PageCursorCodec: Sendable {
  private let sign: @Sendable ([UInt8]) -> [UInt8]

  static let tagLength = 16
  static let maximumLength = 1024
  /// Fields of the payload are separated by a control character no id or query can hold.
  private static let separator: UInt8 = 0x1F

  public init(sign: @escaping @Sendable ([UInt8]) -> [UInt8]) { self.sign = sign }

  public func encode(_ cursor: PageCursor) -> String {
    let payload = Self.payload(cursor)
    return Self.base64URL(payload) + "." + Self.base64URL(tag(payload))
  }

  /// The position `text` holds for `list` at `hub`; throws `invalidCursor` for anything else.
  public func position(_ text: String, hub: HubID, list: PageCursor.List) throws(DomainError) -> String {
    let parts = text.split(separator: ".", omittingEmptySubsequences: false)
    guard text.utf8.count <= Self.maximumLength, parts.count == 2,
      let payload = Self.bytes(base64URL: parts[0]), let presented = Self.bytes(base64URL: parts[1]),
      Self.constantTimeEqual(presented, tag(payload))
    else { throw .invalidCursor("is not one this server gave out") }
    let fields = payload.split(separator: Self.separator, omittingEmptySubsequences: false).map {
      String(decoding: $0, as: UTF8.self)
    }
    guard fields.count == 5, fields[0] == "1" else { throw .invalidCursor("is not one this server gave out") }
    let cursorList: PageCursor.List? =
      switch fields[2] {
      case "c": .category(fields[3])
      case "s": .search(fields[3])
      default: nil
      }
    guard fields[1] == hub, cursorList == list else {
      throw .invalidCursor("belongs to another hub or list")
    }
    return fields[4]
  }

  private func tag(_ payload: [UInt8]) -> [UInt8] { Array(sign(payload).prefix(Self.tagLength)) }

  private static func payload(_ cursor: PageCursor) -> [UInt8] {
    let (kind, name) =
      switch cursor.list {
      case .category(let id): ("c", id)
      case .search(let query): ("s", query)
      }
    var bytes: [UInt8] = []
    for (index, field) in ["1", cursor.hub, kind, name, cursor.position].enumerated() {
      if index > 0 { bytes.append(separator) }
      bytes.append(contentsOf: field.utf8.filter { $0 != separator })
    }
    return bytes
  }

  private static func constantTimeEqual(_ lhs: [UInt8], _ rhs: [UInt8]) -> Bool {
    guard lhs.count == rhs.count, !lhs.isEmpty else { return false }
    var difference: UInt8 = 0
    for index in lhs.indices { difference |= lhs[index] ^ rhs[index] }
    return difference == 0
  }

  static func base64URL(_ bytes: [UInt8]) -> String {
    var text = Data(bytes).base64EncodedString()
    text = text.replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
    while text.hasSuffix("=") { text.removeLast() }
    return text
  }

  static func bytes(base64URL text: Substring) -> [UInt8]? {
    guard !text.isEmpty, text.utf8.allSatisfy({ Self.isBase64URL($0) }) else { return nil }
    var standard = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
    while standard.utf8.count % 4 != 0 { standard.append("=") }
    return Data(base64Encoded: standard).map(Array.init)
  }

  private static func isBase64URL(_ byte: UInt8) -> Bool {
    switch byte {
    case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
      UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "_"):
      true
    default: false
    }
  }
}

/// The `limit` of a page: 1 to 50, 20 when not given.
public enum PageLimit {
  public static let range = 1...50
  public static let standard = 20

  public static func parse(_ text: String?) throws(DomainError) -> Int {
    guard let text else { return standard }
    guard let value = Int(text), range.contains(value) else {
      throw .invalidLimit("must be a whole number from \(range.lowerBound) to \(range.upperBound)")
    }
    return value
  }
}
