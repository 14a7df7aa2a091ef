/// Who is calling, as proven by a verified token.
public struct Principal: Hashable, Sendable {
  public enum Role: String, Hashable, Sendable, Codable {
    case customer, staff, rider
  }

  /// The token's `sub`: the user (or rider) id.
  public var subject: String
  public var role: Role
  /// For staff: the hubs they may change; `["*"]` means all.
  public var hubs: [String]

  public init(subject: String, role: Role = .customer, hubs: [String] = []) {
    self.subject = subject
    self.role = role
    self.hubs = hubs
  }

  /// Whether this principal is staff allowed to change `hub`.
  public func isStaff(of hub: String) -> Bool {
    role == .staff && (hubs.contains("*") || hubs.contains(hub))
  }
}
