import Foundation
import GrocerCore

/// The claims Grocer puts in a token: who (`sub`), as what (`role`, `hubs`) and when (`iat`,
/// `nbf`, `exp`).
public struct TokenClaims: Hashable, Sendable {
  /// `sub`: the user (or rider) id.
  public var subject: String
  /// `role`: `customer`, `staff` or `rider`.
  public var role: Principal.Role
  /// `hubs`: for staff, the hubs they may change; `["*"]` means all. Omitted when empty.
  public var hubs: [String]
  /// `iat`.
  public var issuedAt: Date
  /// `exp`.
  public var expiresAt: Date
  /// `nbf`, if the token must not be used before a given time.
  public var notBefore: Date?

  public init(
    subject: String, role: Principal.Role = .customer, hubs: [String] = [], issuedAt: Date, expiresAt: Date,
    notBefore: Date? = nil
  ) {
    self.subject = subject
    self.role = role
    self.hubs = hubs
    self.issuedAt = issuedAt
    self.expiresAt = expiresAt
    self.notBefore = notBefore
  }

  /// The claim set as compact JSON with a stable key order. Times are whole seconds since the
  /// epoch (JWT NumericDate), rounded down.
  func json() -> String {
    var json = "{\"sub\":" + Self.quoted(subject) + ",\"role\":" + Self.quoted(role.rawValue)
    if !hubs.isEmpty {
      json += ",\"hubs\":[" + hubs.map(Self.quoted).joined(separator: ",") + "]"
    }
    json += ",\"iat\":" + Self.seconds(issuedAt)
    if let notBefore { json += ",\"nbf\":" + Self.seconds(notBefore) }
    json += ",\"exp\":" + Self.seconds(expiresAt) + "}"
    return json
  }

  private static func seconds(_ date: Date) -> String {
    String(Int64(date.timeIntervalSince1970.rounded(.down)))
  }

  /// A JSON string literal: quotes, backslashes and control characters escaped.
  static func quoted(_ text: String) -> String { JSONText.quoted(text) }
}
