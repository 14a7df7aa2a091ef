import Foundation
import Testing

@testable import NotifyGateway

/// Push-to-start's decision and budget, with the clock injected.
@Suite struct LiveActivityStartTests {
  let now = Date(timeIntervalSince1970: 1_790_000_000)
  let policy = LiveActivityStartPolicy(after: 20, budget: 2)

  @Test func anOrderWhoseAppStartedItsActivityNeedsNoStart() {
    let (decision, kept) = policy.decide(hasActivity: true, recent: [now - 10], now: now)
    #expect(decision == .notNeeded && kept == [now - 10])
  }

  @Test func startsCountAgainstTheDevicesBudgetForAnHour() {
    let (first, once) = policy.decide(hasActivity: false, recent: [], now: now)
    #expect(first == .start && once == [now])
    let (second, twice) = policy.decide(hasActivity: false, recent: once, now: now + 60)
    #expect(second == .start && twice == [now, now + 60])
    let (third, kept) = policy.decide(hasActivity: false, recent: twice, now: now + 120)
    #expect(third == .alertInstead && kept == twice, "over the budget: an alert, not counted")
    let (later, window) = policy.decide(hasActivity: false, recent: twice, now: now + 3600)
    #expect(later == .start && window == [now + 60, now + 3600], "the first start left the window")
  }

  @Test func noBudgetMeansAlertsOnly() {
    let (decision, _) = LiveActivityStartPolicy(budget: 0).decide(hasActivity: false, recent: [], now: now)
    #expect(decision == .alertInstead)
  }
}
