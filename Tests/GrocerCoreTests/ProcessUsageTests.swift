import GrocerRuntime
import Testing

@Suite struct ProcessUsageTests {
  @Test func thisProcessHasUsedCPUAndMemory() {
    var sum = 0.0
    for index in 0..<2_000_000 { sum += Double(index).squareRoot() }
    #expect(sum > 0)
    #expect(ProcessUsage.cpuSeconds("self") > 0)
    let resident = ProcessUsage.statusKilobytes("VmRSS", of: "self")
    #expect(resident > 1024)
    #expect(ProcessUsage.statusKilobytes("VmHWM", of: "self") >= resident)
  }

  @Test func aProcessThatIsNotThereHasUsedNothing() {
    #expect(ProcessUsage.cpuSeconds("999999999") == 0)
    #expect(ProcessUsage.statusKilobytes("VmRSS", of: "999999999") == 0)
    #expect(ProcessUsage.statusKilobytes("NoSuchField", of: "self") == 0)
  }
}
