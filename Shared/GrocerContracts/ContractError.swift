/// A value on the wire that breaks a rule of the shared contract (opening hours, unit prices).
///
/// Thrown while decoding or validating; each service maps it onto its own error type.
public enum ContractError: Error, Hashable, Sendable, CustomStringConvertible {
  /// `hours` breaks a rule; the text finishes the sentence "`hours` …".
  case invalidHours(String)
  /// `unitPrice` breaks a rule; the text finishes the sentence "`unitPrice` …".
  case invalidUnitPrice(String)

  public var description: String {
    switch self {
    case .invalidHours(let why): "`hours` \(why)"
    case .invalidUnitPrice(let why): "`unitPrice` \(why)"
    }
  }
}
