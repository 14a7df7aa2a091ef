/// HTTP header fields in the order they were received or added, looked up case-insensitively.
///
/// Stored as a plain array of pairs: requests carry a handful of headers, so a linear scan with an
/// ASCII case-insensitive compare is cheaper than hashing lower-cased copies.
public struct HTTPHeaders: Sendable, Equatable, Sequence, ExpressibleByDictionaryLiteral {
  /// The fields in order; names keep the case they were given.
  public private(set) var pairs: [(name: String, value: String)]

  public init() { pairs = [] }

  /// Empty, with room for `minimumCapacity` fields before the storage grows.
  public init(minimumCapacity: Int) {
    pairs = []
    pairs.reserveCapacity(minimumCapacity)
  }

  public init(_ pairs: [(String, String)]) {
    self.pairs = pairs.map { (name: $0.0, value: $0.1) }
  }

  public init(dictionaryLiteral elements: (String, String)...) {
    self.init(elements)
  }

  /// The first value for `name` (case-insensitive), or nil.
  public subscript(name: String) -> String? {
    for pair in pairs where Self.equalsIgnoringASCIICase(pair.name, name) { return pair.value }
    return nil
  }

  /// Every value for `name`, in order.
  public func values(for name: String) -> [String] {
    pairs.filter { Self.equalsIgnoringASCIICase($0.name, name) }.map(\.value)
  }

  /// Makes room for `minimumCapacity` fields in all.
  public mutating func reserveCapacity(_ minimumCapacity: Int) {
    pairs.reserveCapacity(minimumCapacity)
  }

  /// Appends a field, keeping any existing ones with the same name.
  public mutating func add(_ name: String, _ value: String) {
    pairs.append((name: name, value: value))
  }

  /// Replaces every field named `name` with one field.
  public mutating func set(_ name: String, _ value: String) {
    remove(name)
    pairs.append((name: name, value: value))
  }

  /// Removes every field named `name`.
  public mutating func remove(_ name: String) {
    pairs.removeAll { Self.equalsIgnoringASCIICase($0.name, name) }
  }

  public func contains(_ name: String) -> Bool { self[name] != nil }

  public var count: Int { pairs.count }

  public func makeIterator() -> IndexingIterator<[(name: String, value: String)]> {
    pairs.makeIterator()
  }

  public static func == (lhs: HTTPHeaders, rhs: HTTPHeaders) -> Bool {
    lhs.pairs.count == rhs.pairs.count
      && zip(lhs.pairs, rhs.pairs).allSatisfy { $0.name == $1.name && $0.value == $1.value }
  }

  static func equalsIgnoringASCIICase(_ lhs: String, _ rhs: String) -> Bool {
    // Constant time for native strings, and most names differ in length.
    guard lhs.utf8.count == rhs.utf8.count else { return false }
    var left = lhs.utf8.makeIterator()
    var right = rhs.utf8.makeIterator()
    while true {
      switch (left.next(), right.next()) {
      case (nil, nil): return true
      case (let a?, let b?):
        if a == b { continue }
        if a | 0x20 != b | 0x20 { return false }
        let lower = a | 0x20
        if lower < UInt8(ascii: "a") || lower > UInt8(ascii: "z") { return false }
      default: return false
      }
    }
  }
}
