import Foundation
import Synchronization

/// The source of "now". Injected everywhere a rule depends on time, so tests move time by hand.
///
/// Named `WallClock` so it does not collide with the standard library's `Clock` protocol.
public protocol WallClock: Sendable {
  func now() -> Date
}

/// The real clock.
public struct SystemClock: WallClock {
  public init() {}
  public func now() -> Date { Date() }
}

/// A clock that only moves when a test moves it.
public final class ManualClock: WallClock {
  private let current: Mutex<Date>

  public init(_ start: Date = Date(timeIntervalSince1970: 1_790_000_000)) {
    current = Mutex(start)
  }

  public func now() -> Date { current.withLock { $0 } }

  public func advance(by seconds: TimeInterval) {
    current.withLock { $0 = $0.addingTimeInterval(seconds) }
  }

  public func set(_ date: Date) {
    current.withLock { $0 = date }
  }
}
