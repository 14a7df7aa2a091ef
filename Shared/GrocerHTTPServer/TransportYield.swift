import GrocerCore
import GrocerFastPath
import GrocerHTTP
import Synchronization

#if canImport(Glibc)
  import Glibc
#endif

/// Gives a transport thread's core away (`sched_yield`) when the thread has answered `every`
/// responses without sleeping once (why, and what it measured: `HTTPServerConfiguration.yieldEvery`).
/// Every `every` responses the thread reads its count of voluntary context switches
/// (`getrusage`) and yields only if it has not gone up since the last look: a thread that
/// sleeps gives way by itself.
struct TransportYield: ~Copyable, @unchecked Sendable {
  let every: Int
  /// Per `ThreadStripe` (each transport thread has its own): responses queued, then the
  /// thread's voluntary context switches at the last look.
  private let state = StripedWords(perStripe: 2)

  init(every: Int) { self.every = max(0, every) }

  /// Call once a response is queued, on the transport thread that queued it.
  func responded() {
    guard every > 0 else { return }
    let (stripe, answered) = state.add(1)
    guard answered % every == 0 else { return }
    let switches = Self.voluntarySwitches()
    if state.words(stripe)[1].exchange(switches, ordering: .relaxed) == switches { sched_yield() }
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
