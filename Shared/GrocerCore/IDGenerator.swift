import Foundation
import Synchronization

/// Makes new unique ids (event ids, request ids, reservation ids). Injected so tests get
/// predictable ids.
public protocol IDGenerator: Sendable {
  func next() -> String
}

/// Random UUIDs, lower-cased.
public struct RandomIDs: IDGenerator {
  public init() {}
  public func next() -> String { UUID().uuidString.lowercased() }
}

/// `prefix-1`, `prefix-2`, … for tests.
public final class SequentialIDs: IDGenerator {
  private let counter = Mutex(0)
  private let prefix: String

  public init(prefix: String = "id") { self.prefix = prefix }

  public func next() -> String {
    let n = counter.withLock { value -> Int in
      value += 1
      return value
    }
    return "\(prefix)-\(n)"
  }
}
