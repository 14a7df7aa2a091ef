import GrocerRuntime
import Testing

@Suite struct InFlightTests {
  @Test func aDrainWithNothingUnderWayEndsAtOnce() async {
    #expect(await InFlight().drain(within: .seconds(10)))
  }

  @Test func aDrainEndsWhenTheLastWorkLeaves() async {
    let work = InFlight()
    work.enter()
    work.enter()
    let start = ContinuousClock.now
    async let drained = work.drain(within: .seconds(10))
    try? await Task.sleep(for: .milliseconds(20))
    work.leave()
    try? await Task.sleep(for: .milliseconds(20))
    #expect(work.value == 1)
    work.leave()
    #expect(await drained)
    #expect(ContinuousClock.now - start < .seconds(5))
  }

  @Test func aDrainGivesUpAtItsLimitAndALaterOneStillEnds() async {
    let work = InFlight()
    work.enter()
    #expect(await work.drain(within: .milliseconds(30)) == false)
    async let drained = work.drain(within: .seconds(10))
    try? await Task.sleep(for: .milliseconds(20))
    work.leave()
    #expect(await drained)
  }
}
