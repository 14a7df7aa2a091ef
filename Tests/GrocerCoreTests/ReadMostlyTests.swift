import Foundation
import GrocerFastPath
import Testing

@testable import GrocerCore

@Suite struct ReadMostlyTests {
  /// `ReadMostly` cannot be copied (it owns its locks): tasks share it through a class, as the
  /// services keep theirs.
  final class Shared: Sendable {
    let counts = ReadMostly([String: Int]())
  }

  @Test func readersSeeEveryWriteAndNoneIsLost() async {
    let shared = Shared()
    await withTaskGroup(of: Void.self) { group in
      for writer in 0..<4 {
        group.addTask {
          for _ in 0..<500 { shared.counts.write { $0["w\(writer)", default: 0] += 1 } }
        }
      }
      for reader in 0..<(2 * ThreadStripe.count) {
        group.addTask {
          // Readers on every stripe: each takes its own stripe's lock, the writers take all.
          ThreadStripe.adopt(reader)
          var last = 0
          for _ in 0..<2_000 {
            let total = shared.counts.read { $0.pointee.values.reduce(0, +) }
            // Totals only grow: a reader never sees a half-made write.
            #expect(total >= last)
            last = total
          }
        }
      }
    }
    #expect(shared.counts.read { $0.pointee } == ["w0": 500, "w1": 500, "w2": 500, "w3": 500])
  }

  @Test func writeReturnsWhatItsBodyReturns() {
    let value = ReadMostly(1)
    let before = value.write { value -> Int in
      defer { value = 2 }
      return value
    }
    #expect(before == 1)
    #expect(value.read { $0.pointee } == 2)
  }
}
