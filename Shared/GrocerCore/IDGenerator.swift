import Foundation
import Synchronization

/// Makes new unique ids (event ids, request ids, reservation ids). Injected so tests get
/// predictable ids.
public protocol IDGenerator: Sendable {
  func next() -> String
}

/// Random version-4 UUIDs, lower-cased (`3f2b…-…`).
///
/// Formatted by hand from the system generator: Foundation's `UUID().uuidString` opened
/// `/dev/urandom` and ran `printf` on every call, which showed up on the hot path.
public struct RandomIDs: IDGenerator {
  public init() {}

  public func next() -> String {
    var generator = SystemRandomNumberGenerator()
    var high = generator.next() as UInt64
    var low = generator.next() as UInt64
    high = (high & 0xFFFF_FFFF_FFFF_0FFF) | 0x0000_0000_0000_4000  // version 4
    low = (low & 0x3FFF_FFFF_FFFF_FFFF) | 0x8000_0000_0000_0000  // RFC 4122 variant
    return Digits.uuid(high, low)
  }
}

/// Version-7 UUIDs (RFC 9562), lower-cased: 48 bits of Unix milliseconds first, so ids sort
/// (as strings too) by when they were made.
///
/// Ids used as database keys (order ids, event ids in every consumer's inbox) then land at the
/// end of their B-tree instead of on a random page: a batch of commits dirties (and writes to the
/// WAL) a few pages, not one per row. Below the time, a counter that starts at a random value
/// (42 bits, in `rand_a` and the top of `rand_b`) keeps the ids of one generator strictly
/// increasing within a millisecond, and 32 random bits fixed per generator keep two processes
/// apart: no system call per id, unlike `RandomIDs`. Not for secrets (the next id is guessable).
public final class TimeOrderedIDs: IDGenerator {
  private let counter: Atomic<UInt64>
  private let node: UInt64
  private let milliseconds: @Sendable () -> UInt64

  /// `milliseconds`: Unix time in ms (the wall clock; tests pass their own).
  public init(
    milliseconds: @escaping @Sendable () -> UInt64 = { UInt64(max(0, Date().timeIntervalSince1970 * 1000)) }
  ) {
    var generator = SystemRandomNumberGenerator()
    counter = Atomic(generator.next() & 0xFF_FFFF_FFFF)  // 40 bits: room to count before 42 wrap
    node = generator.next() & 0xFFFF_FFFF
    self.milliseconds = milliseconds
  }

  public func next() -> String {
    let count = counter.add(1, ordering: .relaxed).newValue & 0x3FF_FFFF_FFFF
    let time = milliseconds() & 0xFFFF_FFFF_FFFF
    let high = time << 16 | 0x7000 | (count >> 30)
    let low = 0x8000_0000_0000_0000 | (count & 0x3FFF_FFFF) << 32 | node
    return Digits.uuid(high, low)
  }
}

/// `prefix-1`, `prefix-2`, … for tests.
public final class SequentialIDs: IDGenerator {
  private let counter = Atomic<Int>(0)
  private let prefix: String

  public init(prefix: String = "id") { self.prefix = prefix }

  public func next() -> String {
    "\(prefix)-\(counter.add(1, ordering: .relaxed).newValue)"
  }
}

/// Lower-case digits of base 16 (`bits` 4, `0-9a-f`) or base 32 (`bits` 5, `0-9a-v`).
public enum Digits {
  /// The low `count` digits of `value`, most significant first, at `offset`.
  public static func write(
    _ value: UInt64, digits count: Int, bits: Int, into buffer: UnsafeMutableBufferPointer<UInt8>,
    at offset: Int
  ) {
    let mask = UInt8(1 << bits - 1)
    for index in 0..<count {
      let digit = UInt8(truncatingIfNeeded: value >> UInt64(bits * (count - 1 - index))) & mask
      buffer[offset + index] = digit < 10 ? UInt8(ascii: "0") + digit : UInt8(ascii: "a") + digit - 10
    }
  }

  /// `xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx` from 128 bits, written straight into the string.
  public static func uuid(_ high: UInt64, _ low: UInt64) -> String {
    String(unsafeUninitializedCapacity: 36) { buffer in
      Digits.write(high >> 32, digits: 8, bits: 4, into: buffer, at: 0)
      buffer[8] = UInt8(ascii: "-")
      Digits.write(high >> 16, digits: 4, bits: 4, into: buffer, at: 9)
      buffer[13] = UInt8(ascii: "-")
      Digits.write(high, digits: 4, bits: 4, into: buffer, at: 14)
      buffer[18] = UInt8(ascii: "-")
      Digits.write(low >> 48, digits: 4, bits: 4, into: buffer, at: 19)
      buffer[23] = UInt8(ascii: "-")
      Digits.write(low, digits: 12, bits: 4, into: buffer, at: 24)
      return 36
    }
  }
}
