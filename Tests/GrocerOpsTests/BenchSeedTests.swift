import Foundation
import GrocerContracts
import GrocerCore
import GrocerRuntime
import GrocerSQLite
import GrocerStorage
import Testing
import TrackingService

@testable import GrocerOps

@Suite struct BenchSeedTests {
  @Test func seedingCreatesEachOrderOnceWithItsOwnUserAndDestination() throws {
    let directory = NSTemporaryDirectory() + "grocer-bench-seed-\(UUID().uuidString.prefix(8))"
    defer { try? FileManager.default.removeItem(atPath: directory) }
    let configuration = TrackingServiceConfiguration(settings: Settings(["GROCER_DATA_DIR": directory]))
    let options = try BenchSeed.parse(["--orders", "25", "--hub", "h2", "--prefix", "tb1"])
    #expect(options == BenchSeed.Options(orders: 25, hub: "h2", prefix: "tb1"))

    let first = try BenchSeed.run(options, configuration: configuration, logger: .discarding())
    #expect(first.created == 25)
    #expect(first.lines.count == 25)
    #expect(first.lines[0].hasPrefix("tb1-o000001\ttb1-u000001\t"))
    #expect(Set(first.lines.map { $0.split(separator: "\t")[1] }).count == 25)
    // Seeding again is a redelivery: nothing new.
    #expect(try BenchSeed.run(options, configuration: configuration, logger: .discarding()).created == 0)

    let database = try SQLiteDatabase(
      path: configuration.databasePath, migrations: TrackingSchema.migrations, logger: .discarding())
    defer { database.close() }
    let store = TrackingStore(database: database)
    let seeded = BenchSeed.orders(options)
    let record = try #require(try store.record(seeded[24].orderId))
    #expect(record.userId == "tb1-u000025")
    #expect(record.hub == "h2")
    #expect(record.state.status == .placed)
    #expect(record.version == 1)
    #expect(record.destination == seeded[24].destination)
    #expect(record.eta != nil)
    let destination = try #require(record.destination)
    #expect(destination.isValid)
    #expect(ETAModel.distance(from: destination, to: GeoPoint(lat: 52.52, lng: 13.405)) < 5_000)
    // Each creation put its tracking.updated in the outbox.
    let pending = try database.read { try Outbox.pending(limit: 1_000, in: $0) }
    #expect(pending.count == 25)
  }

  @Test func theCommandLineNeedsACountInRange() {
    #expect(throws: BenchSeed.UsageError.self) { try BenchSeed.parse([]) }
    #expect(throws: BenchSeed.UsageError.self) { try BenchSeed.parse(["--orders", "0"]) }
    #expect(throws: BenchSeed.UsageError.self) { try BenchSeed.parse(["--orders", "5", "--prefix", "a b"]) }
    #expect(throws: BenchSeed.UsageError.self) { try BenchSeed.parse(["--orders", "5", "--what"]) }
    #expect((try? BenchSeed.parse(["--orders", "5"])) == BenchSeed.Options(orders: 5))
  }
}
