import Foundation
import Testing

@testable import GrocerStorage

@Suite struct WakeSignalTests {
  /// A task waiting on `signal` for at most `timeout`; its value is how long the wait lasted.
  private func waiter(_ signal: WakeSignal, timeout: Duration) -> Task<Duration, Never> {
    Task {
      let started = ContinuousClock.now
      await signal.wait(timeout: timeout)
      return ContinuousClock.now - started
    }
  }

  @Test func aNotifyWithNobodyWaitingIsRememberedForTheNextWaitOnly() async {
    let signal = WakeSignal()
    signal.notify()
    let started = ContinuousClock.now
    await signal.wait(timeout: .seconds(60))  // returns at once: the wake was remembered
    #expect(ContinuousClock.now - started < .seconds(10))
    let second = ContinuousClock.now
    await signal.wait(timeout: .milliseconds(50))  // nothing remembered: the timeout ends it
    #expect(ContinuousClock.now - second >= .milliseconds(50))
  }

  @Test func aNotifyEndsAWaitEarlyAndItsTimeoutDoesNotEndTheNextWait() async {
    let signal = WakeSignal()
    // Deadlines in seconds: under parallel tests the 20 ms sleep once overshot a 300 ms one, so
    // the wait timed out first and the notify was left for the next wait.
    let waiter = waiter(signal, timeout: .seconds(2))
    // Until the waiter waits, a notify is remembered instead, which ends its wait as well.
    try? await Task.sleep(for: .milliseconds(20))
    signal.notify()
    #expect(await waiter.value < .seconds(2))
    // The first wait's deadline (2 s) must not cut the next wait (2.5 s) short.
    let started = ContinuousClock.now
    await signal.wait(timeout: .milliseconds(2500))
    #expect(ContinuousClock.now - started >= .milliseconds(2500))
  }

  @Test func cancellingTheWaitingTaskEndsItsWait() async {
    let signal = WakeSignal()
    let waiter = waiter(signal, timeout: .seconds(60))
    try? await Task.sleep(for: .milliseconds(20))
    waiter.cancel()
    #expect(await waiter.value < .seconds(10))
  }
}
