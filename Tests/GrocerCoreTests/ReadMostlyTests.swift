import Foundation
import Testing

@testable import GrocerCore

@Suite struct ReadMostlyTests {
  @Test func readersSeeEveryWriteAndNoneIsLost() async {
    let counts = ReadMostly([String: Int]())
    await withTaskGroup(of: Void.self) { group in
      for writer in 0..<4 {
        group.addTask {
          for _ in 0..<500 { counts.write { $0["w\(writer)", default: 0] += 1 } }
        }
      }
      for _ in 0..<4 {
        group.addTask {
          var last = 0
          for _ in 0..<2_000 {
            let total = counts.read { $0.values.reduce(0, +) }
            // Totals only grow: a reader never sees a half-made write.
            #expect(total >= last)
            last = total
          }
        }
      }
    }
    #expect(counts.read { $0 } == ["w0": 500, "w1": 500, "w2": 500, "w3": 500])
  }

  @Test func writeReturnsWhatItsBodyReturns() {
    let value = ReadMostly(1)
    let before = value.write { value -> Int in
      defer { value = 2 }
      return value
    }
    #expect(before == 1)
    #expect(value.read { $0 } == 2)
  }
}
