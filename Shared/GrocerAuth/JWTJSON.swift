import GrocerCore

/// JWT headers and claim sets (RFC 8259) as `JSONValue`, read with GrocerCore's strict
/// `JSONReader`: token parts are small flat objects read on every authenticated request, and the
/// reader is strict where a token parser should be. It refuses duplicate keys (two `sub`s could be
/// read differently by two parsers), non-finite numbers, invalid UTF-8, control characters in
/// strings, trailing bytes and nesting deeper than `maximumDepth`.
enum JWTJSON {
  static let maximumDepth = 16

  /// Parses `bytes` as one JSON object, or returns nil.
  static func parseObject(_ bytes: [UInt8]) -> [String: JSONValue]? {
    var reader = JSONReader(bytes)
    guard case .object(let object)? = try? reader.readValue(maximumDepth: maximumDepth),
      (try? reader.finish()) != nil
    else { return nil }
    return object
  }
}
