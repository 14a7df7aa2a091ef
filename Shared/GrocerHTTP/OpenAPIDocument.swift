import Foundation
import GrocerCore

/// The OpenAPI document a service serves: the service's own part with the part every service
/// shares (`openapi-shared.json`: the health and metrics operations, `Money`, `Problem`, the bearer
/// scheme, the responses any operation may give) merged in, so the shared part is written once.
///
/// Objects merge member by member; any other value that both parts give is a mistake in one of
/// them and throws, so neither part can silently override the other.
enum OpenAPIDocument {
  /// A member that both parts give and that is not an object in both.
  struct Conflict: Error, Equatable, CustomStringConvertible {
    /// The member's JSON Pointer (`#/components/schemas/Money`).
    let pointer: String

    var description: String { "\(pointer) is given both by the service's OpenAPI part and the shared one" }
  }

  /// `own` (the service's part, a JSON object) with the shared part merged in, as JSON with
  /// sorted keys.
  static func merged(_ own: [UInt8]) throws -> [UInt8] {
    let shared = try JSON.decode(JSONValue.self, from: Data(PackageResources.openapi_shared_json))
    let merged = try merge(shared, JSON.decode(JSONValue.self, from: Data(own)), at: "#")
    let encoder = JSON.encoder()
    encoder.outputFormatting.insert(.prettyPrinted)
    return [UInt8](try encoder.encode(merged))
  }

  private static func merge(_ base: JSONValue, _ other: JSONValue, at pointer: String) throws -> JSONValue {
    guard case .object(var merged) = base, case .object(let members) = other else {
      throw Conflict(pointer: pointer)
    }
    for (key, value) in members {
      let token = key.replacingOccurrences(of: "~", with: "~0").replacingOccurrences(of: "/", with: "~1")
      merged[key] = try merged[key].map { try merge($0, value, at: "\(pointer)/\(token)") } ?? value
    }
    return .object(merged)
  }
}
