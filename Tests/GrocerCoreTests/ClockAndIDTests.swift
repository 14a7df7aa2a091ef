import Foundation
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
}
