import Foundation
import Testing

@testable import GrocerHTTP
@testable import GrocerHTTPServer

@Suite struct TransportYieldTests {
  /// The yield is skipped for a thread that slept since the last look, told by its count of
  /// voluntary context switches: sleeping must raise it, and busy work must not. (A synchronous
  /// test runs on one thread throughout.)
  @Test func sleepingCountsAsAVoluntarySwitchAndBusyWorkDoesNot() {
    let start = TransportYield.voluntarySwitches()
    usleep(2_000)
    let slept = TransportYield.voluntarySwitches()
    var sum = 0
    for value in 0..<200_000 { sum &+= value &* value }
    let worked = TransportYield.voluntarySwitches()
    #expect(start >= 0)
    #expect(slept > start)
    // Busy work may be preempted (an involuntary switch), never a voluntary one.
    #expect(worked == slept)
    #expect(sum != 1)
  }
}
