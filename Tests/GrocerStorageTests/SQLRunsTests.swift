import GrocerStorage
import Testing

@Suite struct SQLRunsTests {
  @Test func runsCoverEveryRowOnceInOrder() {
    for count in 0...600 {
      let ranges = SQLRuns.ranges(count, largest: 128)
      #expect(ranges.flatMap { Array($0) } == Array(0..<count))
    }
  }

  @Test func runSizesComeFromAShortList() {
    let sizes = Set((0...1000).flatMap { SQLRuns.ranges($0, largest: 250).map(\.count) })
    #expect(sizes == [250, 128, 64, 32, 16, 8, 4, 2, 1])
    #expect(SQLRuns.ranges(300, largest: 256).map(\.count) == [256, 32, 8, 4])
    #expect(SQLRuns.ranges(5, largest: 1).map(\.count) == [1, 1, 1, 1, 1])
  }
}
