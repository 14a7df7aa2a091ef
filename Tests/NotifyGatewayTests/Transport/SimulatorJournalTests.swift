import APNsSimulator
import Foundation
import GrocerCore
import GrocerStorage
import Testing

@testable import NotifyGateway

/// The simulator's record outlives its process: what was flushed is there after a restart,
/// newest kept per token, and the file stays bounded.
@Suite struct SimulatorJournalTests {
  static let bundle = "com.grocer.app"

  static func push(_ simulator: APNsSimulator, _ token: String, _ n: Int) async throws -> APNsResponse {
    try await simulator.send(
      APNsRequest(
        token: token, pushType: .alert, topic: bundle, priority: 5, expiration: nil,
        id: UUID().uuidString.lowercased(), payload: Array(#"{"aps":{"alert":"push \#(n)"}}"#.utf8)))
  }

  @Test func aRestartedSimulatorShowsWhatItsDevicesReceivedBefore() async throws {
    let directory = NSTemporaryDirectory() + "grocer-sim-journal-\(UUID().uuidString.prefix(8))"
    defer { try? FileManager.default.removeItem(atPath: directory) }
    var options = APNsSimulator.Options(bundleID: Self.bundle)
    options.keepPerToken = 20
    options.perTokenBurst = 1000
    let (busy, quiet) = (String(repeating: "ab", count: 32), String(repeating: "cd", count: 32))
    let store = try SimulatorJournalStore(dataDirectory: directory, logger: .discarding())
    let first = APNsSimulator(options: options, journal: store)
    for n in 1...45 { _ = try await Self.push(first, busy, n) }
    first.unregister(quiet)
    _ = try await Self.push(first, quiet, 1)
    try first.flush()
    // Pushed after the last flush: lost with the process, as a crash would lose them.
    _ = try await Self.push(first, busy, 46)

    let second = APNsSimulator(
      options: options, journal: try SimulatorJournalStore(dataDirectory: directory, logger: .discarding()))
    let kept = try second.received(by: busy)
    #expect(kept.count == 20)
    #expect(kept.map { $0.payload["aps"]?["alert"] } == (26...45).map { .string("push \($0)") })
    #expect(
      Array(kept.dropFirst()).map(\.headers) == (try first.received(by: busy)).dropLast().map(\.headers))
    let quietPushes = try second.received(by: quiet)
    #expect(quietPushes.map(\.status) == [410])
    #expect(quietPushes.first?.reason == "Unregistered")
    // The file holds at most about half as many again as kept.
    let rows = try SimulatorJournalStore(dataDirectory: directory, logger: .discarding()).rowCount(of: busy)
    #expect((20...30).contains(rows), "\(rows) rows for one token")
    // Nothing to flush is nothing written.
    try second.flush()
  }

  /// Channels are kept as APNs keeps them, until deleted; what each was sent outlives the process.
  @Test func aRestartedSimulatorKeepsItsChannelsAndTheirBroadcasts() async throws {
    let directory = NSTemporaryDirectory() + "grocer-sim-journal-\(UUID().uuidString.prefix(8))"
    defer { try? FileManager.default.removeItem(atPath: directory) }
    let options = APNsSimulator.Options(bundleID: Self.bundle)
    func simulator() throws -> APNsSimulator {
      let simulator = APNsSimulator(
        options: options, journal: try SimulatorJournalStore(dataDirectory: directory, logger: .discarding()))
      try simulator.restore()
      return simulator
    }
    let first = try simulator()
    var ids: [String] = []
    for _ in 0..<2 {
      let created = try await first.createChannel(
        APNsChannelRequest(bundleID: Self.bundle, storagePolicy: 1, id: UUID().uuidString.lowercased()))
      ids.append(try #require(created.channelID))
    }
    let sent = try await first.broadcast(
      APNsBroadcastRequest(
        channelID: ids[0], bundleID: Self.bundle, priority: 10, expiration: nil,
        id: UUID().uuidString.lowercased(),
        payload: Array(#"{"aps":{"event":"update"}}"#.utf8)))
    #expect(sent.status == 200)
    #expect(try first.deleteChannel(ids[1]).status == 204)
    try first.flush()

    let second = try simulator()
    #expect(second.channelIDs == [ids[0]])
    #expect(try second.broadcasts(to: ids[0]).map(\.status) == [200])
    #expect(try second.deleteChannel(ids[1]).reason == "BadChannelId")
  }
}
