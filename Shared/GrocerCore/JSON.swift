import Foundation

/// The one JSON configuration used on the wire: RFC 3339 dates, sorted keys for stable output.
public enum JSON {
  public static func encoder() -> JSONEncoder {
    let encoder = JSONEncoder()
    encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
    encoder.dateEncodingStrategy = .custom { date, encoder in
      var container = encoder.singleValueContainer()
      try container.encode(Timestamp.string(from: date))
    }
    return encoder
  }

  public static func decoder() -> JSONDecoder {
    let decoder = JSONDecoder()
    decoder.dateDecodingStrategy = .custom { decoder in
      let container = try decoder.singleValueContainer()
      let text = try container.decode(String.self)
      guard let date = Timestamp.date(from: text) else {
        throw DecodingError.dataCorruptedError(
          in: container, debugDescription: "expected an RFC 3339 time, got \(text)")
      }
      return date
    }
    return decoder
  }

  public static func encode<T: Encodable>(_ value: T) throws -> Data {
    try encoder().encode(value)
  }

  public static func decode<T: Decodable>(_ type: T.Type, from data: Data) throws -> T {
    try decoder().decode(type, from: data)
  }
}

/// JSON text written by hand, where an encoder would cost too much (log lines, token claims).
public enum JSONText {
  /// `text` as a JSON string literal: quotes, backslashes and control characters escaped,
  /// everything else as is (the one escaper, `JSONBytes`'s).
  public static func quoted(_ text: String) -> String {
    var out = JSONBytes(capacity: text.utf8.count + 2)
    out.string(text)
    return String(decoding: out.bytes, as: UTF8.self)
  }
}
