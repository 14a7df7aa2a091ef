import GrocerOps
import Testing

@Suite struct GrocerOpsTests {
  @Test func namesItsUsage() { #expect(GrocerOps.usage.hasPrefix("usage: grocer")) }
}
