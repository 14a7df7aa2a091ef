import GrocerCore

/// A small, strict JSON reader for JWT headers and claim sets (RFC 8259), producing `JSONValue`.
///
/// Token parts are small flat objects read on every authenticated request; this reader costs a
/// fraction of `JSONDecoder` and is strict where a token parser should be: it refuses duplicate
/// keys (two `sub`s could be read differently by two parsers), non-finite numbers, invalid UTF-8,
/// control characters in strings, trailing bytes and nesting deeper than `maximumDepth`.
struct JWTJSON {
  static let maximumDepth = 16

  private let bytes: UnsafeBufferPointer<UInt8>
  private var index = 0

  private init(_ bytes: UnsafeBufferPointer<UInt8>) { self.bytes = bytes }

  /// Parses `bytes` as one JSON object, or returns nil.
  static func parseObject(_ bytes: [UInt8]) -> [String: JSONValue]? {
    bytes.withUnsafeBufferPointer { buffer in
      var reader = JWTJSON(buffer)
      reader.skipWhitespace()
      guard reader.peek() == UInt8(ascii: "{"), let value = reader.parseValue(depth: 0) else { return nil }
      reader.skipWhitespace()
      guard reader.index == buffer.count, case .object(let object) = value else { return nil }
      return object
    }
  }

  private func peek() -> UInt8? { index < bytes.count ? bytes[index] : nil }

  private mutating func skipWhitespace() {
    while index < bytes.count {
      switch bytes[index] {
      case 0x20, 0x09, 0x0A, 0x0D: index += 1
      default: return
      }
    }
  }

  private mutating func consume(_ byte: UInt8) -> Bool {
    guard peek() == byte else { return false }
    index += 1
    return true
  }

  private mutating func consume(literal: StaticString) -> Bool {
    let count = literal.utf8CodeUnitCount
    guard bytes.count - index >= count else { return false }
    for offset in 0..<count where bytes[index + offset] != literal.utf8Start[offset] { return false }
    index += count
    return true
  }

  private mutating func parseValue(depth: Int) -> JSONValue? {
    guard depth <= Self.maximumDepth else { return nil }
    skipWhitespace()
    switch peek() {
    case UInt8(ascii: "{"): return parseObjectBody(depth: depth)
    case UInt8(ascii: "["): return parseArray(depth: depth)
    case UInt8(ascii: "\""): return parseString().map(JSONValue.string)
    case UInt8(ascii: "t"): return consume(literal: "true") ? .bool(true) : nil
    case UInt8(ascii: "f"): return consume(literal: "false") ? .bool(false) : nil
    case UInt8(ascii: "n"): return consume(literal: "null") ? .null : nil
    case .some: return parseNumber().map(JSONValue.number)
    case nil: return nil
    }
  }

  private mutating func parseObjectBody(depth: Int) -> JSONValue? {
    index += 1  // {
    var object: [String: JSONValue] = [:]
    object.reserveCapacity(8)
    skipWhitespace()
    if consume(UInt8(ascii: "}")) { return .object(object) }
    while true {
      skipWhitespace()
      guard let key = parseString() else { return nil }
      skipWhitespace()
      guard consume(UInt8(ascii: ":")), let value = parseValue(depth: depth + 1) else { return nil }
      guard object.updateValue(value, forKey: key) == nil else { return nil }
      skipWhitespace()
      if consume(UInt8(ascii: ",")) { continue }
      return consume(UInt8(ascii: "}")) ? .object(object) : nil
    }
  }

  private mutating func parseArray(depth: Int) -> JSONValue? {
    index += 1  // [
    var array: [JSONValue] = []
    skipWhitespace()
    if consume(UInt8(ascii: "]")) { return .array(array) }
    while true {
      guard let value = parseValue(depth: depth + 1) else { return nil }
      array.append(value)
      skipWhitespace()
      if consume(UInt8(ascii: ",")) { continue }
      return consume(UInt8(ascii: "]")) ? .array(array) : nil
    }
  }

  private mutating func parseString() -> String? {
    guard consume(UInt8(ascii: "\"")) else { return nil }
    let start = index
    // Fast path: no escapes, so the bytes between the quotes are the string.
    while index < bytes.count {
      let byte = bytes[index]
      if byte == UInt8(ascii: "\"") {
        let text = Self.string(UnsafeBufferPointer(rebasing: bytes[start..<index]))
        index += 1
        return text
      }
      if byte == UInt8(ascii: "\\") { break }
      if byte < 0x20 { return nil }
      index += 1
    }
    var scalars = Array(bytes[start..<index])
    while index < bytes.count {
      let byte = bytes[index]
      index += 1
      switch byte {
      case UInt8(ascii: "\""):
        return scalars.withUnsafeBufferPointer(Self.string)
      case UInt8(ascii: "\\"):
        guard let escaped = peek() else { return nil }
        index += 1
        switch escaped {
        case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): scalars.append(escaped)
        case UInt8(ascii: "b"): scalars.append(0x08)
        case UInt8(ascii: "f"): scalars.append(0x0C)
        case UInt8(ascii: "n"): scalars.append(0x0A)
        case UInt8(ascii: "r"): scalars.append(0x0D)
        case UInt8(ascii: "t"): scalars.append(0x09)
        case UInt8(ascii: "u"):
          guard let scalar = parseUnicodeEscape() else { return nil }
          scalars.append(contentsOf: String(Character(scalar)).utf8)
        default: return nil
        }
      case 0..<0x20:
        return nil
      default:
        scalars.append(byte)
      }
    }
    return nil
  }

  /// The string of UTF-8 `bytes`, or nil when they are not valid UTF-8. ASCII (nearly every
  /// claim) skips the generic validating initialiser, which is slow on Linux.
  private static func string(_ bytes: UnsafeBufferPointer<UInt8>) -> String? {
    if bytes.allSatisfy({ $0 < 0x80 }) { return String(decoding: bytes, as: UTF8.self) }
    return String(validating: bytes, as: UTF8.self)
  }

  /// Reads the `XXXX` after `\u` (and a following `\uXXXX` low surrogate when needed).
  private mutating func parseUnicodeEscape() -> Unicode.Scalar? {
    guard let high = parseHex4() else { return nil }
    if (0xD800...0xDBFF).contains(high) {
      guard consume(literal: "\\u"), let low = parseHex4(), (0xDC00...0xDFFF).contains(low) else {
        return nil
      }
      return Unicode.Scalar(0x10000 + ((high - 0xD800) << 10) + (low - 0xDC00))
    }
    return Unicode.Scalar(high)  // nil for a lone low surrogate
  }

  private mutating func parseHex4() -> UInt32? {
    guard bytes.count - index >= 4 else { return nil }
    var value: UInt32 = 0
    for _ in 0..<4 {
      let byte = bytes[index]
      let digit: UInt8
      switch byte {
      case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = byte - UInt8(ascii: "0")
      case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = byte - UInt8(ascii: "a") + 10
      case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = byte - UInt8(ascii: "A") + 10
      default: return nil
      }
      value = value << 4 | UInt32(digit)
      index += 1
    }
    return value
  }

  /// RFC 8259 number grammar: `-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?`, finite only.
  private mutating func parseNumber() -> Double? {
    let start = index
    let negative = consume(UInt8(ascii: "-"))
    let integerStart = index
    if consume(UInt8(ascii: "0")) {
      // A leading zero stands alone.
    } else if skipDigits() == 0 {
      return nil
    }
    var isInteger = true
    if consume(UInt8(ascii: ".")) {
      isInteger = false
      if skipDigits() == 0 { return nil }
    }
    if consume(UInt8(ascii: "e")) || consume(UInt8(ascii: "E")) {
      isInteger = false
      if !consume(UInt8(ascii: "+")) { _ = consume(UInt8(ascii: "-")) }
      if skipDigits() == 0 { return nil }
    }
    // Fast path for times (`exp`, `nbf`, `iat`): up to 15 digits are exact in a Double.
    if isInteger, index - integerStart <= 15 {
      var value = 0
      for offset in integerStart..<index { value = value &* 10 &+ Int(bytes[offset] &- UInt8(ascii: "0")) }
      return Double(negative ? -value : value)
    }
    let text = String(decoding: UnsafeBufferPointer(rebasing: bytes[start..<index]), as: UTF8.self)
    guard let value = Double(text), value.isFinite else { return nil }
    return value
  }

  private mutating func skipDigits() -> Int {
    let start = index
    while let byte = peek(), (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) { index += 1 }
    return index - start
  }
}
