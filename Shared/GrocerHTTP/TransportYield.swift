import GrocerCore
import Synchronization

#if canImport(Glibc)
  import Glibc
#endif

/// Gives a transport thread's core away (`sched_yield`) when the thread has answered `every`
/// responses without sleeping once.
///
/// Under load MHD's poll loop always finds a request waiting, so its threads never sleep, and a
/// thread that never sleeps keeps its core until the scheduler's slice ends: whatever shares the
/// core waits that long. A thread that does sleep gives way by itself, and yielding it as well
/// only made what it serves wait behind busy neighbours (the tracking service at 2,000 requests
/// per second, its executor threads a core's worth of work beside it). So every `every`
/// responses the thread reads its count of voluntary context switches (`getrusage`) and yields
/// only if it has not gone up since the last look.
struct TransportYield: ~Copyable, @unchecked Sendable {
  let every: Int
  /// Per `ThreadStripe` (each transport thread has its own): responses queued, then the
  /// thread's voluntary context switches at the last look.
  private let base: UnsafeMutableRawPointer
  private let stride: Int

  init(every: Int) {
    self.every = max(0, every)
    (base, stride) = ThreadStripe.allocate(bytesPerStripe: 2 * MemoryLayout<Atomic<Int>>.stride)
    for stripe in 0..<ThreadStripe.count {
      let words = (base + stripe * stride).bindMemory(to: Atomic<Int>.self, capacity: 2)
      words.initialize(to: Atomic(0))
      (words + 1).initialize(to: Atomic(-1))
    }
  }

  deinit { base.deallocate() }

  /// Call once a response is queued, on the transport thread that queued it.
  func responded() {
    guard every > 0 else { return }
    let words = (base + ThreadStripe.current * stride).assumingMemoryBound(to: Atomic<Int>.self)
    guard words[0].add(1, ordering: .relaxed).newValue % every == 0 else { return }
    let switches = Self.voluntarySwitches()
    if words[1].exchange(switches, ordering: .relaxed) == switches { sched_yield() }
  }

  /// The calling thread's voluntary context switches so far (a yield that hands the core over
  /// is not one: the thread stays runnable), or -1 if they cannot be read.
  static func voluntarySwitches() -> Int {
    var usage = rusage()
    // RUSAGE_THREAD (1): Linux's, declared by <sys/resource.h> only under _GNU_SOURCE.
    guard getrusage(__rusage_who_t(1), &usage) == 0 else { return -1 }
    return usage.ru_nvcsw
  }
}
