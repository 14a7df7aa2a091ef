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

  @Test func paddedRunsAreOneStatementUpToTheLargest() {
    #expect(SQLRuns.padded(0, largest: 16).isEmpty)
    #expect(SQLRuns.padded(1, largest: 16) == [[0]])
    #expect(SQLRuns.padded(3, largest: 16) == [[0, 1, 2, 2]])
    #expect(SQLRuns.padded(5, largest: 16) == [[0, 1, 2, 3, 4, 4, 4, 4]])
    #expect(SQLRuns.padded(18, largest: 16) == [Array(0..<16), [16, 17]])
    #expect(SQLRuns.padded(11, largest: 12) == [Array(0..<11) + [10]])
  }

  @Test func paddedRunsCoverEveryRowInOrderWithSizesFromTheShortList() {
    let sizes = [250, 128, 64, 32, 16, 8, 4, 2, 1]
    for count in 0...600 {
      let runs = SQLRuns.padded(count, largest: 250)
      var seen: [Int] = []
      for run in runs {
        #expect(sizes.contains(run.count))
        for index in run where seen.last != index { seen.append(index) }
      }
      #expect(seen == Array(0..<count))
      #expect(runs.count == (count + 249) / 250)
    }
  }
}
