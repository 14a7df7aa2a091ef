import Foundation
import GrocerRuntime
import Synchronization
import Testing

@testable import GrocerCore

@Suite struct DeadlinesTests {
  /// Waits (polling, at most 10 s) until `condition` holds.
  private func eventually(_ condition: () -> Bool) async -> Bool {
    let end = ContinuousClock.now + .seconds(10)
    while !condition() {
      if ContinuousClock.now > end { return false }
      try? await Task.sleep(for: .milliseconds(2))
    }
    return true
  }

  @Test func actionsRunOnceInDeadlineOrderEvenWhenAnEarlierOneIsScheduledLater() async {
    let deadlines = Deadlines()
    let ran = Mutex<[String]>([])
    deadlines.schedule(after: .milliseconds(300)) { ran.withLock { $0.append("late") } }
    // Scheduled after the first, due before it: the sleeping thread must wake for it.
    deadlines.schedule(after: .milliseconds(20)) { ran.withLock { $0.append("soon") } }
    #expect(await eventually { ran.withLock { $0.count } == 2 })
    #expect(ran.withLock { $0 } == ["soon", "late"])
    #expect(deadlines.pending == 0)
  }

  @Test func aCancelledActionNeverRuns() async {
    let deadlines = Deadlines()
    let ran = Mutex<[Int]>([])
    let tokens = (0..<100).map { number in
      deadlines.schedule(after: .milliseconds(30)) { ran.withLock { $0.append(number) } }
    }
    for token in tokens { #expect(deadlines.cancel(token)) }
    #expect(deadlines.pending == 0)
    deadlines.schedule(after: .milliseconds(60)) { ran.withLock { $0.append(-1) } }
    #expect(await eventually { ran.withLock { $0 } == [-1] })
    // Cancelling what already ran says so.
    #expect(deadlines.cancel(tokens[0]) == false)
  }

  @Test func aSchedulerWhoseThreadEndedWhileIdleRunsTheNextAction() async throws {
    let deadlines = Deadlines(idleLifetime: .milliseconds(20))
    let ran = Mutex<[Int]>([])
    deadlines.schedule(after: .milliseconds(5)) { ran.withLock { $0.append(1) } }
    #expect(await eventually { ran.withLock { $0 } == [1] })
    // Past the idle lifetime the thread has ended; the next deadline starts another.
    try await Task.sleep(for: .milliseconds(200))
    deadlines.schedule(after: .milliseconds(5)) { ran.withLock { $0.append(2) } }
    #expect(await eventually { ran.withLock { $0 } == [1, 2] })
  }
}
