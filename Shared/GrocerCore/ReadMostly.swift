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
public final class ReadMostly<Value>: @unchecked Sendable {
  /// Behind a pointer rather than in a stored property: a reader then borrows the value in
  /// place, where reading a class's property hands the closure a copy (a reference count on its
  /// storage, shared by every reading thread).
  @usableFromInline let value: UnsafeMutablePointer<Value>
  @usableFromInline let lock: UnsafeMutablePointer<pthread_rwlock_t>

  public init(_ value: Value) {
    self.value = .allocate(capacity: 1)
    self.value.initialize(to: value)
    lock = .allocate(capacity: 1)
    var attributes = pthread_rwlockattr_t()
    pthread_rwlockattr_init(&attributes)
    #if canImport(Glibc)
      pthread_rwlockattr_setkind_np(&attributes, Int32(PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP))
    #endif
    pthread_rwlock_init(lock, &attributes)
    pthread_rwlockattr_destroy(&attributes)
  }

  deinit {
    pthread_rwlock_destroy(lock)
    lock.deallocate()
    value.deinitialize(count: 1)
    value.deallocate()
  }

  /// Runs `body` with the value, alongside other readers. Inlinable, so it is specialised for
  /// the caller's value: unspecialised, it hands `body` a copy made through the value witness.
  @inlinable
  public func read<Result>(_ body: (borrowing Value) throws -> Result) rethrows -> Result {
    pthread_rwlock_rdlock(lock)
    defer { pthread_rwlock_unlock(lock) }
    return try body(value.pointee)
  }

  /// Runs `body` with the value alone, to change it.
  @inlinable
  public func write<Result>(_ body: (inout Value) throws -> Result) rethrows -> Result {
    pthread_rwlock_wrlock(lock)
    defer { pthread_rwlock_unlock(lock) }
    return try body(&value.pointee)
  }
}
