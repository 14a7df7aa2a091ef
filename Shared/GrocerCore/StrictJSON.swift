import Foundation

/// Request bodies that refuse unknown top-level fields and list the ones they know.
public protocol StrictBody: Decodable, Sendable {
  /// Every top-level key the body may contain.
  static var allowedKeys: Set<String> { get }
  /// See the extension: nil unless the type has a fast path.
  static func fast(_ body: [UInt8]) -> Self?
}

/// Why a client's JSON body was refused, before any rule of the service looked at it.
///
/// `rule` carries an error a type's own decoder threw (an unknown weekday, say), so the service
/// can answer it with its own code.
public enum BodyError: Error, Sendable {
  case malformedJSON(String)
  case wrongType(field: String, expected: String)
  case missingField(String)
  case unknownField(String)
  case rule(any Error & Sendable)
}

extension BodyError {
  /// The stable code and sentence a service answers (400) for a body it could not read; nil for
  /// `.rule`, which the service answers with its own error.
  public var problem: (code: String, detail: String)? {
    switch self {
    case .malformedJSON(let why): ("malformedJSON", "The body is not valid JSON: \(why).")
    case .wrongType(let field, let expected): ("wrongType", "`\(field)` must be \(expected).")
    case .missingField(let field): ("missingField", "`\(field)` is required.")
    case .unknownField(let field): ("unknownField", "`\(field)` is not a known field.")
    case .rule: nil
    }
  }
}

extension StrictBody {
  /// A body read without a JSON parser when it has the one common shape a hot path sees; nil
  /// (the default) sends it through `StrictJSON`, which also explains what is wrong.
  public static func fast(_ body: [UInt8]) -> Self? { nil }

  /// Decodes a body strictly, answering in the caller's own error type.
  public static func decode<E: Error>(from data: Data, mappingErrors map: (BodyError) -> E) throws(E) -> Self
  {
    do { return try StrictJSON.decode(Self.self, from: data) } catch { throw map(error) }
  }

  /// A request's body decoded strictly: the type's `fast` reading first (no copy), then
  /// `StrictJSON`, which gives the same value or explains what is wrong.
  public static func decode<E: Error>(from body: [UInt8], mappingErrors map: (BodyError) -> E) throws(E)
    -> Self
  {
    if let value = fast(body) { return value }
    return try decode(from: Data(body), mappingErrors: map)
  }
}

/// Decoding of client JSON that answers with a precise `BodyError` instead of a
/// `DecodingError`.
///
/// Decisions, all tested: a string `"3"` or `true` where an integer is expected is `wrongType`;
/// `2.5` for an integer is `wrongType`; `2.0` for an integer is accepted as 2 (JSON has one
/// number type and `JSONDecoder` cannot tell them apart, so we follow it); `null` for a
/// required field is `wrongType`; a missing required field is `missingField`; a top-level key
/// the body does not know is `unknownField` (the first one in sorted order, so the reply is
/// stable). Nested objects (`Money`, `hours`) are not checked for extra keys.
public enum StrictJSON {
  /// Decodes a `StrictBody`, rejecting unknown top-level keys first.
  public static func decode<T: StrictBody>(_ type: T.Type, from data: Data) throws(BodyError) -> T {
    try rejectUnknownKeys(in: data, allowed: T.allowedKeys)
    return try decodeAllowingUnknownKeys(type, from: data)
  }

  /// Decodes any `Decodable` with the wire configuration (`JSON.decoder()`), mapping errors.
  public static func decodeAllowingUnknownKeys<T: Decodable>(
    _ type: T.Type, from data: Data
  ) throws(BodyError) -> T {
    do {
      return try JSON.decoder().decode(type, from: data)
    } catch let error as DecodingError {
      throw map(error, data: data)
    } catch {
      throw .rule(error)
    }
  }

  /// Throws `unknownField` if the top-level JSON object has a key outside `allowed`,
  /// `malformedJSON` if `data` is not JSON, `wrongType(field: "body")` if it is not an object.
  public static func rejectUnknownKeys(in data: Data, allowed: Set<String>) throws(BodyError) {
    let object: Any
    do {
      object = try JSONSerialization.jsonObject(with: data, options: [.fragmentsAllowed])
    } catch {
      throw .malformedJSON("it could not be parsed")
    }
    guard let dictionary = object as? [String: Any] else {
      throw .wrongType(field: "body", expected: "a JSON object")
    }
    if let unknown = dictionary.keys.filter({ !allowed.contains($0) }).sorted().first {
      throw .unknownField(unknown)
    }
  }

  static func map(_ error: DecodingError, data: Data) -> BodyError {
    switch error {
    case .typeMismatch(let type, let context):
      return .wrongType(field: path(context.codingPath), expected: describe(type))
    case .valueNotFound(let type, let context):
      return .wrongType(field: path(context.codingPath), expected: describe(type))
    case .keyNotFound(let key, let context):
      return .missingField(path(context.codingPath + [key]))
    case .dataCorrupted(let context):
      if !context.codingPath.isEmpty {
        return .wrongType(field: path(context.codingPath), expected: "a value of the right type")
      }
      // On Linux `JSONDecoder` reports 2.5 or 1e30 for an `Int` as "not valid JSON" without a
      // path. Every number in our bodies is an integer, so find the first one that is not.
      guard let tree = try? JSONSerialization.jsonObject(with: data, options: [.fragmentsAllowed]) else {
        return .malformedJSON("it could not be parsed")
      }
      if let field = firstNonInteger(in: tree, path: "") {
        return .wrongType(field: field, expected: "an integer")
      }
      return .wrongType(field: "body", expected: "the documented shape")
    @unknown default:
      return .malformedJSON("it could not be read")
    }
  }

  static func firstNonInteger(in value: Any, path: String) -> String? {
    if value is Bool || value is String || value is NSNull { return nil }
    if let object = value as? [String: Any] {
      for key in object.keys.sorted() {
        if let found = firstNonInteger(in: object[key]!, path: path.isEmpty ? key : path + "." + key) {
          return found
        }
      }
      return nil
    }
    if let array = value as? [Any] {
      for (index, element) in array.enumerated() {
        if let found = firstNonInteger(in: element, path: path + "[\(index)]") { return found }
      }
      return nil
    }
    if let number = value as? NSNumber {
      let double = number.doubleValue
      let isInteger = double.rounded() == double && abs(double) < 9.2e18
      return isInteger ? nil : (path.isEmpty ? "body" : path)
    }
    return nil
  }

  static func path(_ codingPath: [any CodingKey]) -> String {
    var text = ""
    for key in codingPath {
      if let index = key.intValue {
        text += "[\(index)]"
      } else {
        text += text.isEmpty ? key.stringValue : "." + key.stringValue
      }
    }
    return text.isEmpty ? "body" : text
  }

  static func describe(_ type: Any.Type) -> String {
    switch type {
    case is Int.Type, is Int64.Type, is Int32.Type: "an integer"
    case is String.Type: "a string"
    case is Bool.Type: "true or false"
    case is Double.Type: "a number"
    default:
      String(describing: type).hasPrefix("Array") ? "an array" : "an object"
    }
  }
}
