import Foundation
import GrocerCore

/// Reads settings from environment variables with working local defaults.
///
/// `main` passes the process environment; tests pass a dictionary.
public struct Settings: Sendable {
  public let values: [String: String]

  public init(_ values: [String: String] = ProcessInfo.processInfo.environment) {
    self.values = values
  }

  public func string(_ key: String, default fallback: String) -> String {
    guard let value = values[key], !value.isEmpty else { return fallback }
    return value
  }

  public func int(_ key: String, default fallback: Int) -> Int {
    values[key].flatMap { Int($0.trimmingCharacters(in: .whitespaces)) } ?? fallback
  }

  public func double(_ key: String, default fallback: Double) -> Double {
    values[key].flatMap { Double($0.trimmingCharacters(in: .whitespaces)) } ?? fallback
  }

  public func bool(_ key: String, default fallback: Bool) -> Bool {
    switch values[key]?.lowercased() {
    case "1", "true", "yes", "on": true
    case "0", "false", "no", "off": false
    default: fallback
    }
  }

  /// The local default secret for HS256 tokens; documented in README.md, never for production.
  public static let localJWTSecret = "grocer-local-development-secret-change-me"
}
