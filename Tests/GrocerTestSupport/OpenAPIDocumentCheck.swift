import Foundation
import Testing

/// Reads a service's OpenAPI document for tests: its operations as `"METHOD /template"`, its
/// version and `info`, and the `$ref`s that point nowhere.
///
/// Foundation and Testing only (no GrocerHTTP), so every service's test target can use it with the
/// routes its router reports.
public struct OpenAPIDocumentCheck {
  /// The parsed document.
  public let document: [String: Any]

  /// The HTTP methods OpenAPI names as path item keys.
  static let methods: Set<String> = ["get", "put", "post", "delete", "options", "head", "patch", "trace"]

  public init(bytes: [UInt8]) throws {
    guard let object = try JSONSerialization.jsonObject(with: Data(bytes)) as? [String: Any] else {
      throw CocoaError(.propertyListReadCorrupt)
    }
    document = object
  }

  /// The `openapi` member (`3.1.0`).
  public var version: String? { document["openapi"] as? String }

  /// Whether `info` has a title and a version.
  public var hasInfo: Bool {
    guard let info = document["info"] as? [String: Any] else { return false }
    return info["title"] is String && info["version"] is String
  }

  /// Every documented operation as `"GET /v1/hubs/{hub}"`.
  public var operations: Set<String> {
    var found: Set<String> = []
    for (path, item) in document["paths"] as? [String: Any] ?? [:] {
      for key in (item as? [String: Any] ?? [:]).keys where Self.methods.contains(key) {
        found.insert("\(key.uppercased()) \(path)")
      }
    }
    return found
  }

  /// Operations whose `responses` lack any of `statuses`, as `"GET /v1/hubs/{hub} 431"`.
  public func operationsNotDocumenting(_ statuses: [String]) -> [String] {
    var missing: [String] = []
    for (path, item) in document["paths"] as? [String: Any] ?? [:] {
      for (key, operation) in item as? [String: Any] ?? [:] where Self.methods.contains(key) {
        let responses = (operation as? [String: Any])?["responses"] as? [String: Any] ?? [:]
        for status in statuses where responses[status] == nil {
          missing.append("\(key.uppercased()) \(path) \(status)")
        }
      }
    }
    return missing.sorted()
  }

  /// `$ref`s that do not resolve to a member of this document (JSON Pointer, local refs only;
  /// a ref to another document counts as unresolved).
  public var unresolvedReferences: [String] {
    var references: [String] = []
    Self.collectReferences(document, into: &references)
    return references.filter { resolve($0) == nil }.sorted()
  }

  /// What a local reference (`#/components/schemas/Money`) points at, or nil.
  public func resolve(_ reference: String) -> Any? {
    guard reference.hasPrefix("#/") else { return nil }
    var node: Any = document
    for token in reference.dropFirst(2).split(separator: "/", omittingEmptySubsequences: false) {
      let key = token.replacingOccurrences(of: "~1", with: "/").replacingOccurrences(of: "~0", with: "~")
      guard let object = node as? [String: Any], let next = object[key] else { return nil }
      node = next
    }
    return node
  }

  private static func collectReferences(_ node: Any, into references: inout [String]) {
    if let object = node as? [String: Any] {
      for (key, value) in object {
        if key == "$ref", let reference = value as? String { references.append(reference) }
        collectReferences(value, into: &references)
      }
    } else if let array = node as? [Any] {
      for value in array { collectReferences(value, into: &references) }
    }
  }

  /// Every check of the document a service serves (its own part merged with the shared one), apart
  /// from serving it: it describes exactly `routes` (every registered (method, template)
  /// documented, every documented operation registered, the document's own route among them), and
  /// it is OpenAPI 3.1 with `info` and no `$ref` left unresolved.
  public static func expectDescribes(_ routes: [(method: String, template: String)], served: [UInt8]) throws {
    let check = try OpenAPIDocumentCheck(bytes: served)
    let registered = Set(routes.map { "\($0.method) \($0.template)" })
    #expect(registered.subtracting(check.operations).sorted() == [], "registered but not documented")
    #expect(check.operations.subtracting(registered).sorted() == [], "documented but not registered")
    #expect(registered.contains("GET /openapi.json"))
    #expect(check.version == "3.1.0")
    #expect(check.hasInfo)
    #expect(check.unresolvedReferences == [])
    // The HTTP layer answers these itself, before any route is chosen (HTTPServerTests).
    #expect(check.operationsNotDocumenting(["414", "431"]) == [], "MHD's own answers, possible anywhere")
  }
}
