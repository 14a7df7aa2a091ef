/// A route's template parameters (`{hub}` → `h1`), percent-decoded.
///
/// Held inline, not in a dictionary: the router hands every request the parameters of a path it
/// has seen before, and copying a dictionary takes a reference count on storage every transport
/// thread shares, where short names and values (`hub`, `h1`) are copied as plain bytes. A route
/// has a handful of parameters at most; past four they go to an array.
public struct PathParameters: Sendable, Equatable, ExpressibleByDictionaryLiteral {
  private var first: (name: String, value: String)?
  private var second: (name: String, value: String)?
  private var third: (name: String, value: String)?
  private var fourth: (name: String, value: String)?
  private var more: [(name: String, value: String)] = []

  public init() {}

  public init(dictionaryLiteral elements: (String, String)...) {
    for (name, value) in elements { self[name] = value }
  }

  /// The value of `name`, or nil; setting nil removes it.
  public subscript(name: String) -> String? {
    get {
      if let first, first.name == name { return first.value }
      if let second, second.name == name { return second.value }
      if let third, third.name == name { return third.value }
      if let fourth, fourth.name == name { return fourth.value }
      return more.first { $0.name == name }?.value
    }
    set {
      var all = pairs.filter { $0.name != name }
      if let newValue { all.append((name, newValue)) }
      self = PathParameters(pairs: all)
    }
  }

  public var isEmpty: Bool { first == nil }

  /// Every (name, value), in the order they were set.
  public var pairs: [(name: String, value: String)] {
    [first, second, third, fourth].compactMap { $0 } + more
  }

  private init(pairs: [(name: String, value: String)]) {
    for (index, pair) in pairs.enumerated() {
      switch index {
      case 0: first = pair
      case 1: second = pair
      case 2: third = pair
      case 3: fourth = pair
      default: more.append(pair)
      }
    }
  }

  public static func == (lhs: PathParameters, rhs: PathParameters) -> Bool {
    let left = lhs.pairs
    let right = rhs.pairs
    return left.count == right.count && zip(left, right).allSatisfy { $0 == $1 }
  }
}
