import Foundation
import GrocerCore
import GrocerRuntime
import GrocerSQLite
import Testing

@testable import GrocerStorage

/// Measurements printed for the record, not asserted (the machine is shared); only sanity is
/// checked.
@Suite(.serialized) struct ThroughputTests {
  static let counters = Migration(
    version: 1, name: "counters",
    sql: "CREATE TABLE counters (id INTEGER PRIMARY KEY, value INTEGER NOT NULL)")

  @Test(arguments: [SQLiteDatabase.Durability.normal, .full])
  func singleRowWriteTransactionsPerSecond(durability: SQLiteDatabase.Durability) throws {
    let temp = TemporaryDatabase()
    defer { temp.remove() }
    let database = try temp.open(migrations: [Self.counters], durability: durability)
    let count = 3_000
    let started = ContinuousClock.now
    for number in 0..<count {
      try database.write { try $0.execute("INSERT INTO counters (id, value) VALUES (?, ?)", number, number) }
    }
    let seconds = Self.seconds(ContinuousClock.now - started)
    print(
      "[throughput] single-row write transactions, durability \(durability): \(Int(Double(count) / seconds)) tx/s"
    )
    #expect(try database.read { try $0.queryOne("SELECT count(*) FROM counters")!.int(0) } == count)
  }

  @Test func relayThroughputWithANoOpPublisher() async throws {
    let temp = TemporaryDatabase()
    defer { temp.remove() }
    let database = try temp.open()
    let count = 20_000
    for chunk in stride(from: 0, to: count, by: 1_000) {
      try database.write { connection in
        for number in chunk..<(chunk + 1_000) { try Outbox.append(message(number), in: connection) }
      }
    }
    let relay = OutboxRelay(
      database: database, publisher: NoOpPublisher(), logger: .discarding(), metrics: MetricsRegistry())
    let started = ContinuousClock.now
    try await relay.start()
    let drained = await eventually(timeout: .seconds(60)) {
      (try? database.read { try Outbox.backlog(in: $0) }) == 0
    }
    let seconds = Self.seconds(ContinuousClock.now - started)
    await relay.shutdown()
    #expect(drained)
    print("[throughput] outbox relay, no-op publisher, batch 500: \(Int(Double(count) / seconds)) messages/s")
  }

  static func seconds(_ duration: Duration) -> Double {
    Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
  }
}
