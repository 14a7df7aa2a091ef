import Foundation
import GrocerCore

extension HTTPRequest {
  /// Decodes the JSON body with `GrocerCore.JSON.decoder()`.
  ///
  /// A `Content-Type` other than JSON is a 415; malformed JSON a 400 `malformedJSON`; JSON of the
  /// wrong shape (missing key, wrong type, bad value) a 400 `invalidBody` naming the field. Never
  /// a 500.
  public func decode<T: Decodable>(_ type: T.Type) throws(HTTPError) -> T {
    try requireJSONBody()
    do {
      return try JSON.decoder().decode(type, from: Data(body))
    } catch let error as DecodingError {
      throw Self.problem(for: error)
    } catch {
      throw HTTPError.badRequest(code: "malformedJSON", detail: "the request body is not valid JSON")
    }
  }

  /// Throws 415 unless the body is declared `application/json` (or `…+json`).
  public func requireJSONBody() throws(HTTPError) {
    guard Self.isJSON(headers["Content-Type"]) else {
      throw HTTPError.unsupportedMediaType(detail: "send the body as application/json")
    }
  }

  /// `application/json` or `application/<something>+json`, with any parameters.
  static func isJSON(_ contentType: String?) -> Bool {
    guard let contentType else { return false }
    // What nearly every client sends, without Foundation's slow trimming and lower-casing.
    if contentType == "application/json" || contentType == "application/json; charset=utf-8" { return true }
    let mediaType = contentType.split(separator: ";", maxSplits: 1).first.map {
      $0.trimmingCharacters(in: .whitespaces).lowercased()
    }
    guard let mediaType else { return false }
    return mediaType == "application/json"
      || (mediaType.hasPrefix("application/") && mediaType.hasSuffix("+json"))
  }

  private static func problem(for error: DecodingError) -> HTTPError {
    func path(_ codingPath: [any CodingKey]) -> String {
      let joined = codingPath.map { key in key.intValue.map { "[\($0)]" } ?? key.stringValue }
        .joined(separator: ".")
      return joined.isEmpty ? "the body" : "`\(joined.replacingOccurrences(of: ".[", with: "["))`"
    }
    switch error {
    case .dataCorrupted(let context) where context.codingPath.isEmpty:
      return .badRequest(code: "malformedJSON", detail: "the request body is not valid JSON")
    case .dataCorrupted(let context):
      return .badRequest(
        code: "invalidBody", detail: "\(path(context.codingPath)) is invalid: \(context.debugDescription)")
    case .keyNotFound(let key, let context):
      return .badRequest(
        code: "invalidBody", detail: "\(path(context.codingPath + [key])) is required")
    case .typeMismatch(let expected, let context):
      return .badRequest(
        code: "invalidBody", detail: "\(path(context.codingPath)) must be \(describe(expected))")
    case .valueNotFound(let expected, let context):
      return .badRequest(
        code: "invalidBody", detail: "\(path(context.codingPath)) must be \(describe(expected)), not null")
    @unknown default:
      return .badRequest(code: "invalidBody", detail: "the request body has the wrong shape")
    }
  }

  private static func describe(_ type: Any.Type) -> String {
    switch type {
    case is String.Type: "a string"
    case is Bool.Type: "a boolean"
    case is Int.Type, is Int64.Type, is Int32.Type, is UInt.Type: "an integer"
    case is Double.Type, is Float.Type: "a number"
    default:
      String(describing: type).hasPrefix("Array") ? "an array" : "an object"
    }
  }
}
