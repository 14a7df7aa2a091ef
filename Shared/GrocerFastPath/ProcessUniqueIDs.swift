import GrocerCore

/// Ids unique to this process run: a random prefix chosen at start, then a counter, both in
/// base 32 (`k3x9q0a-1`, `…-2`, … `…-1v`). No system call per id, so cheap enough for a request
/// id on every request; unique across processes with overwhelming probability (35 random bits).
///
/// At most 15 bytes up to 32^7 (34 billion) ids, so the `String` is stored inline: no
/// allocation (the 64-bit hex prefix it had before made every id a heap string).
///
/// The counter is kept per `ThreadStripe` (every request takes an id, on every transport
/// thread): stripe `s` hands out `k × ThreadStripe.count + s` for k = 1, 2, …, so no two stripes
/// meet. Ids are unique, not in order across threads.
public final class ProcessUniqueIDs: IDGenerator {
  private let prefix: UInt64
  private let counter = StripedWords()

  static let prefixDigits = 7

  public init() {
    var generator = SystemRandomNumberGenerator()
    prefix = generator.next() & (1 << (5 * UInt64(Self.prefixDigits)) - 1)
  }

  public func next() -> String {
    let (stripe, turn) = counter.add(1)
    let n = UInt64(turn * ThreadStripe.count + stripe)
    let counterDigits = max(1, (64 - n.leadingZeroBitCount + 4) / 5)
    let length = Self.prefixDigits + 1 + counterDigits
    return String(unsafeUninitializedCapacity: length) { buffer in
      Digits.write(prefix, digits: Self.prefixDigits, bits: 5, into: buffer, at: 0)
      buffer[Self.prefixDigits] = UInt8(ascii: "-")
      Digits.write(n, digits: counterDigits, bits: 5, into: buffer, at: Self.prefixDigits + 1)
      return length
    }
  }
}
