import Foundation

/// JSON read by hand from bytes, for the few types decoded on every message of a hot path
/// (Benchmarks/codecs compares each with `JSONDecoder`).
///
/// A pull reader: the caller walks objects key by key and reads each value with the method for
/// its type; unknown keys are skipped with `skipValue`. Strict JSON (RFC 8259): anything else
/// throws `JSONReader.Failure`. Types that read themselves conform to `JSONReadable`; callers
/// fall back to `JSONDecoder` when the reader fails, so a value it refuses gets the decoder's
/// own error (and nothing the decoder accepts is lost).
public struct JSONReader {
  public struct Failure: Error, CustomStringConvertible {
    public var description: String
    public init(_ description: String) { self.description = description }
  }

  private let bytes: [UInt8]
  private var index = 0

  public init(_ bytes: [UInt8]) { self.bytes = bytes }
  public init(_ data: Data) { self.init([UInt8](data)) }

  /// Reads an object: `body` gets each key and must read (or skip) its value.
  public mutating func readObject(_ body: (inout JSONReader, String) throws -> Void) throws {
    try expect(UInt8(ascii: "{"))
    skipWhitespace()
    if peek() == UInt8(ascii: "}") {
      index += 1
      return
    }
    while true {
      skipWhitespace()
      let key = try readString()
      try expect(UInt8(ascii: ":"))
      try body(&self, key)
      skipWhitespace()
      switch next() {
      case UInt8(ascii: ","): continue
      case UInt8(ascii: "}"): return
      default: throw Failure("expected , or } at byte \(index - 1)")
      }
    }
  }

  /// Reads an array: `body` reads each element.
  public mutating func readArray(_ body: (inout JSONReader) throws -> Void) throws {
    try expect(UInt8(ascii: "["))
    skipWhitespace()
    if peek() == UInt8(ascii: "]") {
      index += 1
      return
    }
    while true {
      try body(&self)
      skipWhitespace()
      switch next() {
      case UInt8(ascii: ","): continue
      case UInt8(ascii: "]"): return
      default: throw Failure("expected , or ] at byte \(index - 1)")
      }
    }
  }

  public mutating func readString() throws -> String {
    try expect(UInt8(ascii: "\""))
    let start = index
    while index < bytes.count {
      let byte = bytes[index]
      if byte == UInt8(ascii: "\"") {
        let text = try Self.validUTF8(bytes[start..<index])
        index += 1
        return text
      }
      if byte == UInt8(ascii: "\\") { break }
      if byte < 0x20 { throw Failure("control character in a string at byte \(index)") }
      index += 1
    }
    // Escapes: decode the rest byte by byte.
    var out = Array(bytes[start..<index])
    while index < bytes.count {
      let byte = bytes[index]
      index += 1
      switch byte {
      case UInt8(ascii: "\""):
        return try Self.validUTF8(out[...])
      case UInt8(ascii: "\\"):
        guard index < bytes.count else { break }
        let escaped = bytes[index]
        index += 1
        switch escaped {
        case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): out.append(escaped)
        case UInt8(ascii: "b"): out.append(0x08)
        case UInt8(ascii: "f"): out.append(0x0C)
        case UInt8(ascii: "n"): out.append(0x0A)
        case UInt8(ascii: "r"): out.append(0x0D)
        case UInt8(ascii: "t"): out.append(0x09)
        case UInt8(ascii: "u"):
          var scalar = try readHex4()
          if (0xD800..<0xDC00).contains(scalar) {
            guard next() == UInt8(ascii: "\\"), next() == UInt8(ascii: "u") else {
              throw Failure("unpaired surrogate")
            }
            let low = try readHex4()
            guard (0xDC00..<0xE000).contains(low) else { throw Failure("unpaired surrogate") }
            scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
          }
          guard let value = Unicode.Scalar(scalar) else { throw Failure("invalid \\u escape") }
          out.append(contentsOf: Array(String(Character(value)).utf8))
        default:
          throw Failure("invalid escape at byte \(index - 1)")
        }
      default:
        if byte < 0x20 { throw Failure("control character in a string at byte \(index - 1)") }
        out.append(byte)
      }
    }
    throw Failure("unterminated string")
  }

  /// An integer written without fraction or exponent.
  public mutating func readInt() throws -> Int {
    skipWhitespace()
    var negative = false
    if peek() == UInt8(ascii: "-") {
      negative = true
      index += 1
    }
    let start = index
    var value = 0
    while index < bytes.count, bytes[index] >= UInt8(ascii: "0"), bytes[index] <= UInt8(ascii: "9") {
      let (times, overflow1) = value.multipliedReportingOverflow(by: 10)
      let (sum, overflow2) = times.addingReportingOverflow(Int(bytes[index] - UInt8(ascii: "0")))
      guard !overflow1, !overflow2 else { throw Failure("integer out of range") }
      value = sum
      index += 1
    }
    guard index > start else { throw Failure("expected a number at byte \(start)") }
    guard index - start == 1 || bytes[start] != UInt8(ascii: "0") else { throw Failure("leading zero") }
    if let following = peek(), following == UInt8(ascii: ".") || following | 0x20 == UInt8(ascii: "e") {
      throw Failure("expected an integer at byte \(start)")
    }
    return negative ? -value : value
  }

  public mutating func readInt64() throws -> Int64 { Int64(try readInt()) }

  /// RFC 8259's number grammar, `-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?`, finite only.
  public mutating func readDouble() throws -> Double {
    skipWhitespace()
    let start = index
    let negative = consume(UInt8(ascii: "-"))
    let integerStart = index
    if consume(UInt8(ascii: "0")) {
      // A leading zero stands alone.
    } else if skipDigits() == 0 {
      throw Failure("expected a number at byte \(start)")
    }
    var isInteger = true
    if consume(UInt8(ascii: ".")) {
      isInteger = false
      if skipDigits() == 0 { throw Failure("expected digits after . at byte \(index)") }
    }
    if consume(UInt8(ascii: "e")) || consume(UInt8(ascii: "E")) {
      isInteger = false
      if !consume(UInt8(ascii: "+")) { _ = consume(UInt8(ascii: "-")) }
      if skipDigits() == 0 { throw Failure("expected an exponent at byte \(index)") }
    }
    // Fast path for whole numbers (times such as `exp`): up to 15 digits are exact in a Double.
    if isInteger, index - integerStart <= 15 {
      var value = 0
      for offset in integerStart..<index { value = value &* 10 &+ Int(bytes[offset] &- UInt8(ascii: "0")) }
      return Double(negative ? -value : value)
    }
    guard let value = Double(String(decoding: bytes[start..<index], as: UTF8.self)), value.isFinite else {
      throw Failure("number out of range at byte \(start)")
    }
    return value
  }

  /// Any value as a `JSONValue` tree. Refuses duplicate keys (two parsers could read them
  /// differently) and nesting deeper than `maximumDepth`.
  public mutating func readValue(maximumDepth: Int = 64) throws -> JSONValue {
    try readValue(depth: 0, maximumDepth: maximumDepth)
  }

  private mutating func readValue(depth: Int, maximumDepth: Int) throws -> JSONValue {
    guard depth <= maximumDepth else { throw Failure("nested deeper than \(maximumDepth)") }
    skipWhitespace()
    switch peek() {
    case UInt8(ascii: "{")?:
      var object: [String: JSONValue] = [:]
      try readObject { reader, key in
        let value = try reader.readValue(depth: depth + 1, maximumDepth: maximumDepth)
        guard object.updateValue(value, forKey: key) == nil else { throw Failure("duplicate key \(key)") }
      }
      return .object(object)
    case UInt8(ascii: "[")?:
      var array: [JSONValue] = []
      try readArray { reader in
        array.append(try reader.readValue(depth: depth + 1, maximumDepth: maximumDepth))
      }
      return .array(array)
    case UInt8(ascii: "\"")?: return .string(try readString())
    case UInt8(ascii: "t")?, UInt8(ascii: "f")?: return .bool(try readBool())
    case UInt8(ascii: "n")?:
      guard readNull() else { throw Failure("expected null at byte \(index)") }
      return .null
    default: return .number(try readDouble())
    }
  }

  public mutating func readBool() throws -> Bool {
    skipWhitespace()
    if consume("true") { return true }
    if consume("false") { return false }
    throw Failure("expected true or false at byte \(index)")
  }

  /// True (and consumed) if the next value is `null`.
  public mutating func readNull() -> Bool {
    skipWhitespace()
    return consume("null")
  }

  /// An RFC 3339 time, as `JSON.decoder()` reads it.
  public mutating func readDate() throws -> Date {
    let text = try readString()
    guard let date = Timestamp.date(from: text) else { throw Failure("expected an RFC 3339 time") }
    return date
  }

  /// Skips one value of any type.
  public mutating func skipValue() throws {
    skipWhitespace()
    switch peek() {
    case UInt8(ascii: "{")?: try readObject { reader, _ in try reader.skipValue() }
    case UInt8(ascii: "[")?: try readArray { reader in try reader.skipValue() }
    case UInt8(ascii: "\"")?: _ = try readString()
    case UInt8(ascii: "t")?, UInt8(ascii: "f")?: _ = try readBool()
    case UInt8(ascii: "n")?: guard readNull() else { throw Failure("expected null at byte \(index)") }
    default: _ = try readDouble()
    }
  }

  /// Throws unless only whitespace is left.
  public mutating func finish() throws {
    skipWhitespace()
    guard index == bytes.count else { throw Failure("unexpected byte \(index) after the value") }
  }

  // MARK: - Bytes

  private func peek() -> UInt8? { index < bytes.count ? bytes[index] : nil }

  private mutating func next() -> UInt8? {
    guard index < bytes.count else { return nil }
    defer { index += 1 }
    return bytes[index]
  }

  private mutating func expect(_ byte: UInt8) throws {
    skipWhitespace()
    guard next() == byte else {
      throw Failure("expected \(Character(Unicode.Scalar(byte))) at byte \(max(0, index - 1))")
    }
  }

  private mutating func skipWhitespace() {
    while index < bytes.count {
      switch bytes[index] {
      case 0x20, 0x09, 0x0A, 0x0D: index += 1
      default: return
      }
    }
  }

  private mutating func consume(_ word: StaticString) -> Bool {
    let count = word.utf8CodeUnitCount
    guard index + count <= bytes.count else { return false }
    let matches = word.withUTF8Buffer { expected in
      (0..<count).allSatisfy { bytes[index + $0] == expected[$0] }
    }
    if matches { index += count }
    return matches
  }

  private mutating func readHex4() throws -> UInt32 {
    var value: UInt32 = 0
    for _ in 0..<4 {
      guard let byte = next() else { throw Failure("short \\u escape") }
      let digit: UInt8
      switch byte {
      case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = byte - UInt8(ascii: "0")
      case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = byte - UInt8(ascii: "a") + 10
      case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = byte - UInt8(ascii: "A") + 10
      default: throw Failure("invalid \\u escape")
      }
      value = value << 4 | UInt32(digit)
    }
    return value
  }

  private mutating func consume(_ byte: UInt8) -> Bool {
    guard peek() == byte else { return false }
    index += 1
    return true
  }

  private mutating func skipDigits() -> Int {
    let start = index
    while let byte = peek(), (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) { index += 1 }
    return index - start
  }

  /// ASCII (nearly every key and value) skips the generic validating initialiser, slow on Linux.
  private static func validUTF8(_ slice: ArraySlice<UInt8>) throws -> String {
    if slice.allSatisfy({ $0 < 0x80 }) { return String(decoding: slice, as: UTF8.self) }
    guard let text = String(validating: slice, as: UTF8.self) else { throw Failure("invalid UTF-8") }
    return text
  }
}

/// A type that reads itself with a `JSONReader` (the hot-path twin of its `Decodable`).
public protocol JSONReadable {
  init(reading reader: inout JSONReader) throws
}

extension Money: JSONReadable {
  public init(reading reader: inout JSONReader) throws {
    var minorUnits: Int?
    var currency: String?
    try reader.readObject { reader, key in
      switch key {
      case "minorUnits": minorUnits = try reader.readInt()
      case "currency": currency = try reader.readString()
      default: try reader.skipValue()
      }
    }
    guard let minorUnits, let currency else {
      throw JSONReader.Failure("Money needs minorUnits and currency")
    }
    self.init(minorUnits: minorUnits, currency: currency)
  }
}

extension JSON {
  /// `T` read by hand with its `JSONReadable` reader; if the reader refuses the bytes,
  /// `JSONDecoder` decodes them (and throws its own error if it refuses them too).
  public static func read<T: Decodable & JSONReadable>(_ type: T.Type, from data: Data) throws -> T {
    var reader = JSONReader(data)
    if let value = try? T(reading: &reader), (try? reader.finish()) != nil { return value }
    return try decode(type, from: data)
  }
}
