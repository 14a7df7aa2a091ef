import Foundation

/// Any JSON value. Used where a payload's shape belongs to someone else (an event's `data`).
public enum JSONValue: Codable, Hashable, Sendable {
  case null
  case bool(Bool)
  case number(Double)
  case string(String)
  case array([JSONValue])
  case object([String: JSONValue])

  /// Tries each kind in turn, the most common first: every miss is a thrown error (and, under
  /// swift-testing, a captured backtrace), so strings cost none and objects two.
  public init(from decoder: any Decoder) throws {
    let container = try decoder.singleValueContainer()
    if container.decodeNil() {
      self = .null
    } else if let value = try? container.decode(String.self) {
      self = .string(value)
    } else if let value = try? container.decode(Double.self) {
      self = .number(value)
    } else if let value = try? container.decode([String: JSONValue].self) {
      self = .object(value)
    } else if let value = try? container.decode([JSONValue].self) {
      self = .array(value)
    } else {
      self = .bool(try container.decode(Bool.self))
    }
  }

  public func encode(to encoder: any Encoder) throws {
    var container = encoder.singleValueContainer()
    switch self {
    case .null: try container.encodeNil()
    case .bool(let value): try container.encode(value)
    case .number(let value):
      if value.rounded() == value, abs(value) < 1e15 {
        try container.encode(Int64(value))
      } else {
        try container.encode(value)
      }
    case .string(let value): try container.encode(value)
    case .array(let value): try container.encode(value)
    case .object(let value): try container.encode(value)
    }
  }

  /// Converts any `Encodable` into a `JSONValue` (through its JSON form).
  public init<T: Encodable>(encoding value: T) throws {
    self = try JSON.decode(JSONValue.self, from: JSON.encode(value))
  }

  /// Decodes this value as `T`.
  public func decode<T: Decodable>(as type: T.Type) throws -> T {
    try JSON.decode(type, from: JSON.encode(self))
  }

  public subscript(key: String) -> JSONValue? {
    if case .object(let object) = self { return object[key] }
    return nil
  }
}
