import Foundation
import GrocerCore
import GrocerRuntime
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

  @Test func aLeaseOfAProcessThatDiedOnThisHostIsTakenAtOnce() throws {
    let temp = TemporaryDatabase()
    defer { temp.remove() }
    let database = try temp.open()
    let host = ProcessInfo.processInfo.hostName
    // A pid far above any the kernel hands out names a process that surely does not exist.
    let dead = OutboxLease(owner: "\(host)/2147483000/x", duration: 60)
    let alive = OutboxLease(owner: "\(host)/1/y", duration: 60)
    let elsewhere = OutboxLease(owner: "another-host/2147483000/z", duration: 60)
    let me = OutboxLease(owner: OutboxLease.processOwner(), duration: 60)
    let start = Date(timeIntervalSince1970: 1_790_000_000)

    #expect(try database.write { try dead.acquire(at: start, in: $0) })
    #expect(try database.read { try me.heldByAnother(at: start + 1, in: $0) } == false)
    #expect(try database.write { try me.acquire(at: start + 1, in: $0) })

    // A live process (pid 1) and a process on another host keep their leases until they expire.
    for holder in [alive, elsewhere] {
      try database.write { try me.release(in: $0) }
      #expect(try database.write { try holder.acquire(at: start + 2, in: $0) })
      #expect(try database.write { try me.acquire(at: start + 3, in: $0) } == false)
      try database.write { try holder.release(in: $0) }
    }
  }
}
