import GrocerCore

/// A reference to an object its owner keeps alive for longer than any use of this one, used
/// without reference counting.
///
/// For the hot paths that every transport thread runs: taking a reference count on a shared
/// object is a write to a cache line all those threads share, and on two cores those writes
/// cost more than the work around them (measured, with the other changes that took reference
/// counts off the stock lookup: its in-process path went from 4.1 to 2.8 µs per request on
/// each of two threads at once, 2.2 to 1.3 µs on one). The owner must hold the object strongly,
/// in a place it never removes it from while this reference may be used.
public struct Unretained<Object: AnyObject>: @unchecked Sendable {
  @usableFromInline let reference: Unmanaged<Object>

  public init(_ object: Object) { reference = .passUnretained(object) }

  /// Runs `body` with the object borrowed.
  @inlinable
  public func with<Result>(_ body: (Object) throws -> Result) rethrows -> Result {
    try reference._withUnsafeGuaranteedRef(body)
  }
}
