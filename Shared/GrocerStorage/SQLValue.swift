import Foundation

/// One SQL value: what a statement binds and what a row holds.
public enum SQLValue: Hashable, Sendable {
  case null
  case integer(Int64)
  case real(Double)
  case text(String)
  case blob([UInt8])
}

extension SQLValue: ExpressibleByNilLiteral {
  public init(nilLiteral: ()) { self = .null }
}

extension SQLValue: ExpressibleByIntegerLiteral {
  public init(integerLiteral value: Int64) { self = .integer(value) }
}

extension SQLValue: ExpressibleByFloatLiteral {
  public init(floatLiteral value: Double) { self = .real(value) }
}

extension SQLValue: ExpressibleByStringLiteral {
  public init(stringLiteral value: String) { self = .text(value) }
}

extension SQLValue: ExpressibleByBooleanLiteral {
  public init(booleanLiteral value: Bool) { self = .integer(value ? 1 : 0) }
}

/// A Swift value that can be bound to a statement parameter.
///
/// Lets callers write `execute("… WHERE id = ?", id)` with `Int`, `String`, `Bool`, `Double`,
/// `[UInt8]`, `Data` or an optional of those (nil binds NULL). Dates are deliberately not
/// bindable: pick a representation (epoch seconds as `Double`, milliseconds as `Int64`,
/// `Timestamp.string`) explicitly in your schema.
public protocol SQLBindable {
  var sqlValue: SQLValue { get }
}

extension SQLValue: SQLBindable {
  public var sqlValue: SQLValue { self }
}

extension Int: SQLBindable {
  public var sqlValue: SQLValue { .integer(Int64(self)) }
}

extension Int64: SQLBindable {
  public var sqlValue: SQLValue { .integer(self) }
}

extension Int32: SQLBindable {
  public var sqlValue: SQLValue { .integer(Int64(self)) }
}

extension Bool: SQLBindable {
  public var sqlValue: SQLValue { .integer(self ? 1 : 0) }
}

extension Double: SQLBindable {
  public var sqlValue: SQLValue { .real(self) }
}

extension String: SQLBindable {
  public var sqlValue: SQLValue { .text(self) }
}

extension Substring: SQLBindable {
  public var sqlValue: SQLValue { .text(String(self)) }
}

extension Array: SQLBindable where Element == UInt8 {
  public var sqlValue: SQLValue { .blob(self) }
}

extension Data: SQLBindable {
  public var sqlValue: SQLValue { .blob([UInt8](self)) }
}

extension Optional: SQLBindable where Wrapped: SQLBindable {
  public var sqlValue: SQLValue { self?.sqlValue ?? .null }
}
