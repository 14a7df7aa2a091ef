import GrocerCore

#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif

/// A reading of the monotonic clock in nanoseconds, for timing requests: one vDSO call to take
/// and a subtraction to read. `ContinuousClock.Instant` is 128-bit: taking one is two 128-bit
/// multiplications, and reading a duration as seconds a 128-bit division (measured: about 1.5%
/// of a trivial HTTP request, taken and read once each).
public struct MonotonicInstant: Sendable, Hashable, Comparable {
  public let nanoseconds: UInt64

  public init(nanoseconds: UInt64) { self.nanoseconds = nanoseconds }

  public static var now: MonotonicInstant { reading(CLOCK_MONOTONIC) }

  /// The same clock to the kernel's tick (a few ms), for deadlines seconds long: a fraction of
  /// the cost of `now`.
  public static var coarseNow: MonotonicInstant { reading(CLOCK_MONOTONIC_COARSE) }

  private static func reading(_ clock: clockid_t) -> MonotonicInstant {
    var spec = timespec()
    clock_gettime(clock, &spec)
    return MonotonicInstant(nanoseconds: UInt64(spec.tv_sec) &* 1_000_000_000 &+ UInt64(spec.tv_nsec))
  }

  /// Seconds from this instant to now (0 if the instant is in the future).
  public var secondsElapsed: Double {
    let now = Self.now.nanoseconds
    return now > nanoseconds ? Double(now - nanoseconds) / 1e9 : 0
  }

  public static func < (lhs: MonotonicInstant, rhs: MonotonicInstant) -> Bool {
    lhs.nanoseconds < rhs.nanoseconds
  }
}
