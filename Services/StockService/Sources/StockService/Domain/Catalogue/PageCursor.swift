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

/// Writes and reads `PageCursor`s as values the app cannot alter: `seal` makes one of the
/// payload and `open` gives the payload back only for one it made (in the service: a
/// `MessageAuthenticator` under a key every replica shares).
public struct PageCursorCodec: Sendable {
  private let seal: @Sendable ([UInt8]) -> String
  private let open: @Sendable (String) -> [UInt8]?

  /// Fields of the payload are separated by a control character no id or query can hold.
  private static let separator: UInt8 = 0x1F

  public init(seal: @escaping @Sendable ([UInt8]) -> String, open: @escaping @Sendable (String) -> [UInt8]?) {
    self.seal = seal
    self.open = open
  }

  public func encode(_ cursor: PageCursor) -> String { seal(Self.payload(cursor)) }

  /// The position `text` holds for `list` at `hub`; throws `invalidCursor` for anything else.
  public func position(_ text: String, hub: HubID, list: PageCursor.List) throws(DomainError) -> String {
    guard let payload = open(text) else { throw .invalidCursor("is not one this server gave out") }
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
