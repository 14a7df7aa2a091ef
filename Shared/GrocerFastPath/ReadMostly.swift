import GrocerCore

#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif

/// A value read by many threads at once and written now and then (route matches, remembered
/// replies, instruments by label): a reader-writer lock, so readers never wait for each other.
///
/// Under a `Mutex`, an HTTP thread preempted while it held the lock made every other thread spin
/// and then sleep on it (measured: with 8 HTTP threads on 2 cores, stock lookups fell to 0.2× of
/// nginx, most of the time in `_MutexHandle._lockSlow` and context switches). A reader holding a
/// read lock blocks only writers. Writers are preferred, so a stream of readers cannot starve
/// them; a reader must therefore never take the lock again inside `read`.
///
/// One lock per `ThreadStripe`: taking even a read lock writes to it, and with one lock for all
/// every request moved its cache line between the cores. A reader takes its stripe's lock; a
/// writer takes every stripe's, in order.
///
/// A non-copyable struct of pointers, not a class: kept in a class's `let`, it is used in place,
/// where a class instance was retained and released around every read, by every reader.
public struct ReadMostly<Value>: ~Copyable, @unchecked Sendable {
  /// Behind a pointer rather than in a stored property, so a reader can reach into it in place
  /// (see `read`).
  @usableFromInline let value: UnsafeMutablePointer<Value>
  /// `ThreadStripe.count` locks, `stride` bytes apart.
  @usableFromInline let locks: UnsafeMutableRawPointer
  @usableFromInline let stride: Int

  public init(_ value: Value) {
    self.value = .allocate(capacity: 1)
    self.value.initialize(to: value)
    (locks, stride) = ThreadStripe.allocate(bytesPerStripe: MemoryLayout<pthread_rwlock_t>.size)
    var attributes = pthread_rwlockattr_t()
    pthread_rwlockattr_init(&attributes)
    #if canImport(Glibc)
      pthread_rwlockattr_setkind_np(&attributes, Int32(PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP))
    #endif
    for stripe in 0..<ThreadStripe.count {
      let lock = (locks + stripe * stride).bindMemory(to: pthread_rwlock_t.self, capacity: 1)
      pthread_rwlock_init(lock, &attributes)
    }
    pthread_rwlockattr_destroy(&attributes)
  }

  deinit {
    for stripe in 0..<ThreadStripe.count { pthread_rwlock_destroy(lock(stripe)) }
    locks.deallocate()
    value.deinitialize(count: 1)
    value.deallocate()
  }

  @usableFromInline func lock(_ stripe: Int) -> UnsafeMutablePointer<pthread_rwlock_t> {
    (locks + stripe * stride).assumingMemoryBound(to: pthread_rwlock_t.self)
  }

  /// Runs `body` with the value, alongside other readers. `body` gets the value's address and
  /// should reach into it (`$0.pointee.table[key]`): the value passed as an argument, even a
  /// borrowing one, is copied first, and its copy retains every array and dictionary inside,
  /// shared by all readers (measured: five reference counts per stock lookup, moving between
  /// the cores). Inlinable, so it is specialised for the caller's value.
  @inlinable
  public func read<Result>(_ body: (UnsafePointer<Value>) throws -> Result) rethrows -> Result {
    let lock = lock(ThreadStripe.current)
    pthread_rwlock_rdlock(lock)
    defer { pthread_rwlock_unlock(lock) }
    return try body(value)
  }

  /// Runs `body` with the value alone, to change it.
  @inlinable
  public func write<Result>(_ body: (inout Value) throws -> Result) rethrows -> Result {
    for stripe in 0..<ThreadStripe.count { pthread_rwlock_wrlock(lock(stripe)) }
    defer { for stripe in (0..<ThreadStripe.count).reversed() { pthread_rwlock_unlock(lock(stripe)) } }
    return try body(&value.pointee)
  }
}
