import APNsSimulator
import Foundation
import GrocerContracts
import GrocerCore
import GrocerTestSupport
import Synchronization
import Testing

@testable import NotifyGateway

/// Two replicas of NotifyGateway on one PostgreSQL database, their delivery rounds running at
/// the same time against one slow APNs: each update and each alert goes out once, and an
/// activity's pushes go one at a time, each after the last was recorded.
@Suite struct NotifyReplicaTests {
  /// Answers 200 after `delay`, recording each request's token and how many to that token were
  /// in flight when it arrived.
  final class SlowTransport: APNsTransport {
    let delay: Duration
    let sent = Mutex<[String]>([])
    let inFlight = Mutex<[String: Int]>([:])
    let overlaps = Atomic<Int>(0)

    init(delay: Duration) { self.delay = delay }

    func send(_ request: APNsRequest) async throws -> APNsResponse {
      let token = request.token
      let concurrent = inFlight.withLock { flights in
        flights[token, default: 0] += 1
        return flights[token]!
      }
      if concurrent > 1 { overlaps.add(1, ordering: .relaxed) }
      sent.withLock { $0.append(token) }
      try? await Task.sleep(for: delay)
      inFlight.withLock { $0[token, default: 1] -= 1 }
      return .ok
    }

    func count(_ token: String) -> Int { sent.withLock { $0.filter { $0 == token }.count } }
  }

  /// Replicas a and b on one fresh database and queue, sending through one slow APNs.
  struct Replicas {
    let location: TestLocation
    let transport: SlowTransport
    let clock = ManualClock()
    let a: NotifyFixture
    let b: NotifyFixture

    init(delay: Duration) throws {
      location = try TestEngine.postgres.freshLocation("notify")
      transport = SlowTransport(delay: delay)
      let queue = "notify-replicas-\(UUID().uuidString.prefix(8).lowercased())"
      a = try NotifyFixture(
        transport: transport, clock: clock, sharing: location, serviceName: queue, replicaID: "a")
      b = try NotifyFixture(
        transport: transport, clock: clock, sharing: location, serviceName: queue, replicaID: "b")
    }
  }

  @Test func twoReplicasSendEachUpdateAndAlertOnce() async throws {
    let replicas = try Replicas(delay: .milliseconds(40))
    defer { replicas.location.remove() }
    let (a, b, transport, clock) = (replicas.a, replicas.b, replicas.transport, replicas.clock)
    let orders = (0..<24).map { "o\($0)" }
    for (index, order) in orders.enumerated() {
      try a.activity(order, token: NotifyFixture.activityToken(index))
      try a.update(a.snapshot(order, 1, .picking))
    }
    for device in 0..<6 { try b.app.commands.registerDevice(NotifyFixture.deviceToken(device), user: "u1") }
    try b.app.commands.queueAlert(
      AlertText(title: "Order confirmed", body: "We're packing your order."), user: "u1", orderId: "o1",
      occurredAt: clock.now(), messageID: "m-alert", consumer: b.consumer)

    // Both replicas' rounds at once, and again while newer versions arrive.
    async let first = (a.app.engine.round(), b.app.engine.round())
    _ = await first
    for (index, order) in orders.enumerated() {
      try (index % 2 == 0 ? a : b).update(a.snapshot(order, 2, .onTheWay))
    }
    async let second: Void = a.deliver()
    async let third: Void = b.deliver()
    _ = await (second, third)

    for index in orders.indices {
      #expect(transport.count(NotifyFixture.activityToken(index)) == 2, "activity \(index)")
    }
    for device in 0..<6 {
      #expect(transport.count(NotifyFixture.deviceToken(device)) == 1, "device \(device)")
    }
    #expect(transport.overlaps.load(ordering: .relaxed) == 0, "two pushes to one token in flight at once")
    for order in orders {
      #expect(try a.app.store.activity(order)?.state.lastVersion == 2)
    }
    #expect(try a.app.store.pendingCount() == 0)
  }

  /// Two replicas' consumers taking one order's consecutive versions at the same moment (a
  /// backlog after a broker restart is spread over both): the newer stays pending whichever
  /// commits last.
  @Test func twoReplicasConsumingOneOrdersVersionsAtOnceKeepTheNewest() async throws {
    let replicas = try Replicas(delay: .milliseconds(1))
    defer { replicas.location.remove() }
    let (a, b) = (replicas.a, replicas.b)
    let orders = (0..<60).map { "race\($0)" }
    // Each order's version 2 on a and version 1 on b, started together, one order at a time.
    for order in orders {
      async let newer = Task.detached { try a.update(a.snapshot(order, 2, .picking)) }.value
      async let older = Task.detached { try b.update(b.snapshot(order, 1, .picking)) }.value
      _ = try await (newer, older)
    }
    let versions = try a.app.store.database.read { db in
      try orders.map { try a.app.store.pendingVersion($0, in: db) }
    }
    #expect(versions == Array(repeating: 2, count: orders.count))
  }

  /// Push-to-start on two replicas at once: each order is started once, on each of its devices,
  /// and each device's budget counts the starts of both.
  @Test func twoReplicasStartEachOrderOnce() async throws {
    let replicas = try Replicas(delay: .milliseconds(20))
    defer { replicas.location.remove() }
    let (a, b, transport, clock) = (replicas.a, replicas.b, replicas.transport, replicas.clock)
    let starts = (0..<6).map { PushToStartTests.startToken($0) }
    for (index, start) in starts.enumerated() {
      try a.app.commands.registerDevice(NotifyFixture.deviceToken(index), user: "u\(index)")
      try a.app.commands.setStartToken(start, device: NotifyFixture.deviceToken(index), user: "u\(index)")
      for order in 0..<2 { try (order == 0 ? a : b).confirmed("o\(index)-\(order)", user: "u\(index)") }
    }
    clock.advance(by: 21)
    async let first: Void = a.deliver()
    async let second: Void = b.deliver()
    _ = await (first, second)
    for start in starts { #expect(transport.count(start) == 2, "two orders, one start each") }
    for index in starts.indices {
      #expect(transport.count(NotifyFixture.deviceToken(index)) == 2, "the two confirmation alerts")
    }
    // A third order within the hour: the device's budget (3) counts both replicas' starts.
    for index in starts.indices {
      for order in 2..<4 { try b.confirmed("o\(index)-\(order)", user: "u\(index)") }
    }
    clock.advance(by: 21)
    async let third: Void = a.deliver()
    async let fourth: Void = b.deliver()
    _ = await (third, fourth)
    for start in starts { #expect(transport.count(start) == 3, "the budget of three an hour") }
  }

  /// One customer's two orders falling due in two replicas' rounds at once: the second replica
  /// leaves the customer alone while the first holds their starts, so the device's budget (one
  /// start left) is decided once; the second order then gets an alert instead.
  @Test func twoReplicasNeverStartOneCustomersOrdersAtOnce() async throws {
    let replicas = try Replicas(delay: .milliseconds(400))
    defer { replicas.location.remove() }
    let (a, b, transport, clock) = (replicas.a, replicas.b, replicas.transport, replicas.clock)
    let (device, start) = (NotifyFixture.deviceToken(7), PushToStartTests.startToken(7))
    try a.app.commands.registerDevice(device, user: "u7")
    try a.app.commands.setStartToken(start, device: device, user: "u7")
    // Two of the hour's three starts used already.
    try a.app.store.database.write {
      try a.app.store.saveStartTimes([clock.now() - 600, clock.now() - 300], device: device, in: $0)
    }
    try a.confirmed("o7-1", user: "u7")
    clock.advance(by: 5)
    try b.confirmed("o7-2", user: "u7")
    clock.advance(by: 16)
    // Replica a claims the first order (only it is due) and waits on APNs; meanwhile the second
    // falls due and replica b's round runs.
    async let first = a.app.engine.round()
    try await Task.sleep(for: .milliseconds(150))
    clock.advance(by: 5)
    _ = await b.app.engine.round()
    _ = await first
    async let drainA: Void = a.deliver()
    async let drainB: Void = b.deliver()
    _ = await (drainA, drainB)
    #expect(transport.count(start) == 1, "one start left in the budget")
    // The two confirmations and the second order's alert instead of a start.
    #expect(transport.count(device) == 3)
    #expect(try a.app.store.database.read { try $0.queryOne("SELECT count(*) FROM starts")?.int(0) } == 0)
  }

  @Test func aReplicaThatStoppedMidRoundHasItsClaimsTakenOverOnceTheyRunOut() async throws {
    let replicas = try Replicas(delay: .milliseconds(1))
    defer { replicas.location.remove() }
    let (a, b, transport, clock) = (replicas.a, replicas.b, replicas.transport, replicas.clock)
    try a.activity("o1", token: NotifyFixture.activityToken(1))
    try a.update(a.snapshot("o1", 1, .picking))
    // Replica a claims the update and stops before sending it (its claim stays behind).
    let sender = "a"
    _ = try await a.app.store.database.writeAsync { db in
      let due = try a.app.store.dueUpdates(at: clock.now(), limit: 10, sender: sender, in: db)
      try a.app.store.claimActivities(due.map(\.orderId), sender: sender, until: clock.now() + 30, in: db)
    }
    #expect(await b.app.engine.round() == false, "b sent what a holds")
    clock.advance(by: 31)
    await b.deliver()
    #expect(transport.count(NotifyFixture.activityToken(1)) == 1)
    #expect(try b.app.store.pendingCount() == 0)
  }
}
