import Foundation
import GrocerContracts
import Synchronization
import Testing

@testable import StockService

@Suite struct CatalogueMemoryTests {
  static let start = Date(timeIntervalSince1970: 1_790_000_000)

  /// Builds that take `delay` each, counted.
  final class Builds: Sendable {
    private let count = Atomic<Int>(0)
    var started: Int { count.load(ordering: .relaxed) }

    func build(taking delay: Duration = .milliseconds(100)) -> @Sendable () async throws -> CatalogueSnapshot
    {
      { [self] in
        count.add(1, ordering: .relaxed)
        try await Task.sleep(for: delay)
        return try CatalogueScreensTests.snapshot([(CatalogueScreensTests.product("p1", "fruit"), 0)])
      }
    }
  }

  @Test func requestsThatMissTogetherShareOneBuild() async throws {
    let memory = CatalogueMemory()
    let builds = Builds()
    let hub = try CatalogueScreensTests.snapshot([]).hub.id
    let snapshots = try await withThrowingTaskGroup(of: CatalogueSnapshot.self) { group in
      for _ in 0..<20 {
        group.addTask { try await memory.snapshot(hub: hub, now: Self.start, building: builds.build()) }
      }
      return try await group.reduce(into: []) { $0.append($1) }
    }
    #expect(builds.started == 1)
    #expect(snapshots.count == 20 && snapshots.allSatisfy { $0 === snapshots[0] })
    // Kept: the next request does not build; after the maximum age one build again.
    let kept = try await memory.snapshot(hub: hub, now: Self.start + 10, building: builds.build())
    #expect(kept === snapshots[0] && builds.started == 1)
    _ = try await memory.snapshot(
      hub: hub, now: Self.start + memory.maximumAge + 1, building: builds.build())
    #expect(builds.started == 2)
  }

  @Test func aBuildUnderWayWhenTheHubIsInvalidatedIsNeitherJoinedNorKept() async throws {
    let memory = CatalogueMemory()
    let builds = Builds()
    let hub = try CatalogueScreensTests.snapshot([]).hub.id
    let early = Task {
      try await memory.snapshot(hub: hub, now: Self.start, building: builds.build(taking: .milliseconds(300)))
    }
    while builds.started == 0 { try await Task.sleep(for: .milliseconds(5)) }
    memory.invalidate(hub: hub)
    let late = try await memory.snapshot(hub: hub, now: Self.start, building: builds.build())
    #expect(builds.started == 2)
    let older = try await early.value
    #expect(older !== late)
    // What is kept is the build that began after the invalidation.
    let kept = try await memory.snapshot(hub: hub, now: Self.start + 1, building: builds.build())
    #expect(kept === late && builds.started == 2)
  }

  @Test func aFailedBuildFailsItsWaitersAndTheNextRequestBuildsAgain() async throws {
    struct Down: Error {}
    let memory = CatalogueMemory()
    let hub = try CatalogueScreensTests.snapshot([]).hub.id
    await #expect(throws: Down.self) {
      try await memory.snapshot(hub: hub, now: Self.start) { throw Down() }
    }
    let builds = Builds()
    _ = try await memory.snapshot(hub: hub, now: Self.start, building: builds.build())
    #expect(builds.started == 1 && memory.buildsStarted == 2)
  }
}
