import Foundation
import GrocerContracts
import GrocerTestSupport
import Synchronization
import Testing

@testable import StockService

@Suite struct StockMissLoaderTests {
  final class Calls: Sendable {
    let skus = Mutex<[[SKU]]>([])
  }

  /// A read that takes 200 ms and records which SKUs it was asked for.
  private func slowLoad(_ calls: Calls, count: Int = 1, readAt: Date = Date()) -> StockMissLoader.Load {
    { skus in
      calls.skus.withLock { $0.append(skus) }
      try await Task.sleep(for: .milliseconds(200))
      return (skus.map { StockRow(sku: $0, count: count, sequence: 1) }, readAt)
    }
  }

  @Test func requestsMissingTheSameEntriesTogetherShareOneRead() async throws {
    let loader = StockMissLoader()
    let calls = Calls()
    let load = slowLoad(calls, count: 7, readAt: Date(timeIntervalSinceReferenceDate: 1000))
    let results = try await withThrowingTaskGroup(of: [StockRow].self) { group in
      for _ in 0..<20 {
        group.addTask { try await loader.rows(hub: "h1", skus: ["p1", "p2"], epoch: 0, load: load).rows }
      }
      return try await group.reduce(into: []) { $0.append($1) }
    }
    #expect(calls.skus.withLock { $0.count } == 1)
    #expect(results.allSatisfy { $0.map(\.sku) == ["p1", "p2"] })
    // Once the read finished, the next miss reads again.
    _ = try await loader.rows(hub: "h1", skus: ["p1"], epoch: 0, load: load)
    #expect(calls.skus.withLock { $0.count } == 2)
  }

  @Test func onlyTheEntriesNotAlreadyBeingReadAreRead() async throws {
    let loader = StockMissLoader()
    let calls = Calls()
    let load = slowLoad(calls)
    async let first = loader.rows(hub: "h1", skus: ["p1"], epoch: 0, load: load)
    try await Task.sleep(for: .milliseconds(50))
    let second = try await loader.rows(hub: "h1", skus: ["p1", "p2"], epoch: 0, load: load)
    _ = try await first
    #expect(second.rows.map(\.sku) == ["p1", "p2"])
    #expect(calls.skus.withLock { $0 } == [["p1"], ["p2"]])
  }

  @Test func onlyTheReaderAsksForTheAgedOutEntriesAndJoinersGetJustTheirOwn() async throws {
    let loader = StockMissLoader()
    let calls = Calls()
    let load = slowLoad(calls)
    let agedOut = (1...1000).map { "q\($0)" }
    async let reader = loader.rows(hub: "h1", skus: ["p1"], epoch: 0, alsoRefresh: { agedOut }, load: load)
    try await Task.sleep(for: .milliseconds(50))
    let asked = Mutex(false)
    let joiner = try await loader.rows(
      hub: "h1", skus: ["q7", "p1"], epoch: 0,
      alsoRefresh: {
        asked.withLock { $0 = true }
        return agedOut
      }, load: load)
    #expect(try await reader.rows.map(\.sku) == ["p1"])
    #expect(joiner.rows.map(\.sku) == ["q7", "p1"])
    #expect(!asked.withLock { $0 })
    #expect(calls.skus.withLock { $0 } == [["p1"] + agedOut])
  }

  @Test func aFailedReadFailsItsWaitersAndIsNotKept() async throws {
    struct Broken: Error {}
    let loader = StockMissLoader()
    let failing: StockMissLoader.Load = { _ in throw Broken() }
    await #expect(throws: Broken.self) {
      _ = try await loader.rows(hub: "h1", skus: ["p1"], epoch: 0, load: failing)
    }
    let working: StockMissLoader.Load = { skus in
      (skus.map { StockRow(sku: $0, count: 3, sequence: 1) }, Date())
    }
    #expect(try await loader.rows(hub: "h1", skus: ["p1"], epoch: 0, load: working).rows.first?.count == 3)
  }

  @Test func aRequestThatSawAnInvalidationDoesNotJoinAnOlderRead() async throws {
    let loader = StockMissLoader()
    let calls = Calls()
    let load = slowLoad(calls)
    async let before = loader.rows(hub: "h1", skus: ["p1"], epoch: 4, load: load)
    try await Task.sleep(for: .milliseconds(50))
    _ = try await loader.rows(hub: "h1", skus: ["p1"], epoch: 5, load: load)
    _ = try await before
    #expect(calls.skus.withLock { $0.count } == 2)
  }
}
