import Foundation
import GrocerCore
import Testing

@testable import GrocerStorage

/// Replicas sharing one database each run a relay; the lease lets one publish at a time.
@Suite struct OutboxLeaseTests {
  @Test func twoRelaysOnOneDatabasePublishEachRowOnce() async throws {
    let temp = TemporaryDatabase()
    defer { temp.remove() }
    let first = try temp.open(migrations: [OutboxRelayTests.stockTable])
    let second = try temp.open(migrations: [OutboxRelayTests.stockTable])
    let (one, two) = (RecordingPublisher(), RecordingPublisher())
    let relayOne = OutboxRelay(
      database: first, publisher: one, batchSize: 7, idlePoll: .milliseconds(20), logger: .discarding(),
      metrics: MetricsRegistry())
    let relayTwo = OutboxRelay(
      database: second, publisher: two, batchSize: 7, idlePoll: .milliseconds(20), logger: .discarding(),
      metrics: MetricsRegistry())
    try await relayOne.start()
    try await relayTwo.start()
    for number in 0..<60 {
      try OutboxRelayTests.changeStock(number.isMultiple(of: 2) ? first : second, number)
    }
    #expect(await eventually { one.published.count + two.published.count >= 60 })
    try await Task.sleep(for: .milliseconds(200))
    #expect(one.published.count + two.published.count == 60, "a row went out twice")
    #expect(one.published.isEmpty || two.published.isEmpty)

    // The holder stops and gives the lease up: the other relay carries on at once.
    let (holder, other, otherPublisher) =
      one.published.isEmpty ? (relayTwo, relayOne, one) : (relayOne, relayTwo, two)
    await holder.shutdown()
    let before = otherPublisher.published.count
    for number in 60..<70 { try OutboxRelayTests.changeStock(first, number) }
    #expect(await eventually(timeout: .seconds(5)) { otherPublisher.published.count == before + 10 })
    await other.shutdown()
  }

  @Test func aLeaseHeldByAnotherIsNotTakenUntilItExpires() throws {
    let temp = TemporaryDatabase()
    defer { temp.remove() }
    let database = try temp.open()
    let a = OutboxLease(owner: "a", duration: 10)
    let b = OutboxLease(owner: "b", duration: 10)
    let start = Date(timeIntervalSince1970: 1_790_000_000)
    #expect(try database.write { try a.acquire(at: start, in: $0) })
    #expect(try database.write { try b.acquire(at: start + 5, in: $0) } == false)
    #expect(try database.read { try b.heldByAnother(at: start + 5, in: $0) })
    #expect(try database.write { try a.acquire(at: start + 6, in: $0) })  // renewed to 16
    #expect(try database.write { try b.acquire(at: start + 15, in: $0) } == false)
    #expect(try database.write { try b.acquire(at: start + 17, in: $0) })
    try database.write { try b.release(in: $0) }
    #expect(try database.write { try a.acquire(at: start + 18, in: $0) })
  }
}
