import GrocerCore

#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif

/// Objects found by a key of two byte strings (a method and a path, a hub and a query), read by
/// every request on every thread and written now and then.
///
/// An open-addressing table in memory of its own, behind a `ReadMostly` lock: a lookup hashes
/// the key's bytes, compares them with `memcmp` and hands `body` the object borrowed, taking no
/// reference count. A `Dictionary` kept under the same lock retained its storage around every
/// probe (the compiler cannot tell the hash calls leave it alone), and that storage is shared
/// by every reader: one cache line moving between the cores twice per lookup.
///
/// The table owns a copy of each key and a reference to each object. Hashing is Swift's seeded
/// `Hasher` (keys come from clients).
public struct ByteKeyIndex<Object: AnyObject>: ~Copyable, @unchecked Sendable {
  @usableFromInline struct Slot {
    @usableFromInline var hash: Int
    /// The key's bytes: the first part, 0xFF (never in UTF-8), the second part.
    @usableFromInline var key: UnsafeMutableRawBufferPointer
    /// Retained by the table; nil in an empty slot.
    @usableFromInline var object: Unmanaged<Object>?
  }

  /// Plain pointers and counts: copying it out of the lock takes no reference count.
  @usableFromInline struct Table {
    @usableFromInline var slots: UnsafeMutablePointer<Slot>?
    /// Slot count − 1 (a power of two minus one); 0 while there are no slots.
    @usableFromInline var mask = 0
    @usableFromInline var count = 0
  }

  @usableFromInline let table = ReadMostly(Table())

  public init() {}

  deinit { table.write { Self.clear(&$0) } }

  /// Objects held.
  public var count: Int { table.read { $0.pointee.count } }

  /// `body` with the object under (`first`, `second`), borrowed; nil if there is none.
  @inlinable
  public func find<Result>(_ first: String, _ second: String, _ body: (Object) -> Result) -> Result? {
    Self.withBytes(first, second) { first, second in
      let hash = Self.hash(first, second)
      return table.read { table -> Result? in
        let table = table.pointee
        guard let slots = table.slots else { return nil }
        var index = hash & table.mask
        while let object = slots[index].object {
          if slots[index].hash == hash && Self.matches(slots[index].key, first, second) {
            return object._withUnsafeGuaranteedRef(body)
          }
          index = (index + 1) & table.mask
        }
        return nil
      }
    }
  }

  /// Stores `object` under (`first`, `second`); returns the object it replaces, if any.
  @discardableResult
  public func insert(_ object: Object, _ first: String, _ second: String) -> Object? {
    Self.withBytes(first, second) { first, second in
      let hash = Self.hash(first, second)
      return table.write { table -> Object? in
        if let slots = table.slots {
          var index = hash & table.mask
          while let existing = slots[index].object {
            if slots[index].hash == hash && Self.matches(slots[index].key, first, second) {
              slots[index].object = .passRetained(object)
              return existing.takeRetainedValue()
            }
            index = (index + 1) & table.mask
          }
        }
        if (table.count + 1) * 4 > (table.mask + 1) * 3 { Self.grow(&table) }
        let key = UnsafeMutableRawBufferPointer.allocate(
          byteCount: first.count + 1 + second.count, alignment: 1)
        key.copyMemory(from: first)
        key[first.count] = 0xFF
        UnsafeMutableRawBufferPointer(rebasing: key[(first.count + 1)...]).copyMemory(from: second)
        Self.place(Slot(hash: hash, key: key, object: .passRetained(object)), in: table)
        table.count += 1
        return nil
      }
    }
  }

  /// Drops every object for which `shouldRemove` is true.
  public func removeAll(where shouldRemove: (Object) -> Bool) {
    table.write { table in
      guard let slots = table.slots else { return }
      var kept: [Slot] = []
      for index in 0...table.mask {
        guard let object = slots[index].object else { continue }
        if object._withUnsafeGuaranteedRef(shouldRemove) {
          object.release()
          slots[index].key.deallocate()
        } else {
          kept.append(slots[index])
        }
        slots[index].object = nil
      }
      // Linear probing: the survivors are placed again rather than leaving holes in their runs.
      for slot in kept { Self.place(slot, in: table) }
      table.count = kept.count
    }
  }

  /// Drops every object.
  public func removeAll() { table.write { Self.clear(&$0) } }

  private static func clear(_ table: inout Table) {
    guard let slots = table.slots else { return }
    for index in 0...table.mask {
      guard let object = slots[index].object else { continue }
      object.release()
      slots[index].key.deallocate()
    }
    slots.deallocate()
    table = Table()
  }

  private static func grow(_ table: inout Table) {
    let capacity = max(16, (table.mask + 1) * 2)
    let slots = UnsafeMutablePointer<Slot>.allocate(capacity: capacity)
    slots.initialize(
      repeating: Slot(hash: 0, key: UnsafeMutableRawBufferPointer(start: nil, count: 0), object: nil),
      count: capacity)
    let old = table
    table.slots = slots
    table.mask = capacity - 1
    if let oldSlots = old.slots {
      for index in 0...old.mask where oldSlots[index].object != nil { place(oldSlots[index], in: table) }
      oldSlots.deallocate()
    }
  }

  /// Puts `slot` in the first free place of its run (there is one: the table is never full).
  private static func place(_ slot: Slot, in table: Table) {
    guard let slots = table.slots else { return }
    var index = slot.hash & table.mask
    while slots[index].object != nil { index = (index + 1) & table.mask }
    slots[index] = slot
  }

  @inlinable
  static func hash(_ first: UnsafeRawBufferPointer, _ second: UnsafeRawBufferPointer) -> Int {
    var hasher = Hasher()
    hasher.combine(bytes: first)
    hasher.combine(UInt8(0xFF))
    hasher.combine(bytes: second)
    return hasher.finalize()
  }

  @inlinable
  static func matches(
    _ key: UnsafeMutableRawBufferPointer, _ first: UnsafeRawBufferPointer, _ second: UnsafeRawBufferPointer
  ) -> Bool {
    guard key.count == first.count + 1 + second.count, let stored = key.baseAddress else { return false }
    if let start = first.baseAddress, memcmp(stored, start, first.count) != 0 { return false }
    guard key[first.count] == 0xFF else { return false }
    if let start = second.baseAddress, memcmp(stored + first.count + 1, start, second.count) != 0 {
      return false
    }
    return true
  }

  /// The UTF-8 bytes of both strings (a copy of each `String` value: the callers' own).
  @inlinable
  static func withBytes<Result>(
    _ first: String, _ second: String, _ body: (UnsafeRawBufferPointer, UnsafeRawBufferPointer) -> Result
  ) -> Result {
    var first = first
    var second = second
    return first.withUTF8 { first in
      second.withUTF8 { second in body(UnsafeRawBufferPointer(first), UnsafeRawBufferPointer(second)) }
    }
  }
}
