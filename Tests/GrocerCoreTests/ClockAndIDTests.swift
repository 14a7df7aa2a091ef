import Foundation
import Synchronization
import Testing

@testable import GrocerCore

@Suite struct ManualClockTests {
  @Test func movesOnlyWhenToldTo() {
    let start = Date(timeIntervalSince1970: 1_790_000_000)
    let clock = ManualClock(start)
    #expect(clock.now() == start)
    #expect(clock.now() == start)
    clock.advance(by: 30)
    #expect(clock.now() == start.addingTimeInterval(30))
    clock.advance(by: -10)
    #expect(clock.now() == start.addingTimeInterval(20))
    clock.set(Date(timeIntervalSince1970: 0))
    #expect(clock.now() == Date(timeIntervalSince1970: 0))
  }

  @Test func startsAtAFixedDateByDefault() {
    #expect(ManualClock().now() == Date(timeIntervalSince1970: 1_790_000_000))
  }

  @Test func theSystemClockTellsTheTime() {
    let before = Date()
    let now = SystemClock().now()
    #expect(now >= before && now <= Date())
  }
}

@Suite struct IDGeneratorTests {
  @Test func sequentialIDsCountUpWithTheirPrefix() {
    let ids = SequentialIDs(prefix: "evt")
    #expect([ids.next(), ids.next(), ids.next()] == ["evt-1", "evt-2", "evt-3"])
    #expect(SequentialIDs().next() == "id-1")
  }

  @Test func sequentialIDsStayUniqueAcrossTasks() async {
    let ids = SequentialIDs()
    let all = await withTaskGroup(of: [String].self) { group in
      for _ in 0..<8 { group.addTask { (0..<250).map { _ in ids.next() } } }
      return await group.reduce(into: [String]()) { $0 += $1 }
    }
    #expect(all.count == 2000)
    #expect(Set(all) == Set((1...2000).map { "id-\($0)" }))
  }

  @Test func randomIDsAreLowerCaseUUIDs() {
    let id = RandomIDs().next()
    #expect(UUID(uuidString: id) != nil)
    #expect(id == id.lowercased())
    #expect(RandomIDs().next() != id)
  }

  @Test func timeOrderedIDsAreVersion7UUIDsThatSortByTimeThenByCount() {
    let now = Mutex<UInt64>(1_764_597_600_123)  // 2025-12-01T14:00:00.123Z
    let ids = TimeOrderedIDs(milliseconds: { now.withLock { $0 } })
    let first = ids.next()
    #expect(UUID(uuidString: first) != nil && first == first.lowercased())
    // The first 48 bits are the milliseconds; version 7; RFC 9562 variant (8, 9, a or b).
    #expect(first.prefix(13) == "019ada36-8f7b")
    #expect(Array(first)[14] == "7" && "89ab".contains(Array(first)[19]))
    var made = [first]
    for step in 0..<3000 {
      if step % 1000 == 999 { now.withLock { $0 += 1 } }
      made.append(ids.next())
    }
    // Strictly increasing as strings, within a millisecond and across them: keys append.
    #expect(zip(made, made.dropFirst()).allSatisfy { $0 < $1 })
    #expect(Set(made).count == made.count)
    // Another generator (another process) in the same millisecond makes other ids.
    let other = TimeOrderedIDs(milliseconds: { now.withLock { $0 } })
    #expect(Set((0..<1000).map { _ in other.next() }).isDisjoint(with: made))
  }

  @Test func timeOrderedIDsFromManyTasksAreUnique() async {
    let ids = TimeOrderedIDs()
    let all = await withTaskGroup(of: [String].self) { group in
      for _ in 0..<8 { group.addTask { (0..<500).map { _ in ids.next() } } }
      return await group.reduce(into: [String]()) { $0 += $1 }
    }
    #expect(Set(all).count == 4000)
  }
}
