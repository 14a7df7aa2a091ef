import Foundation
import GrocerContracts
import GrocerCore
import GrocerStorage
import GrocerTestSupport
import Testing

@testable import NotifyGateway

/// The consumed-event use cases against a fresh database (`TestEngine.selected`'s engine), without
/// the broker or a transport: each message once, the newest update per order, alerts per device.
@Suite struct NotifyCommandsTests {
  let clock = ManualClock(Date(timeIntervalSince1970: 1_790_000_000))
  let store: NotifyStore
  let commands: NotifyCommands
  let cleanup: DatabaseCleanup

  init() throws {
    let location = try TestEngine.selected.freshLocation("notify_commands")
    cleanup = DatabaseCleanup(location)
    store = NotifyStore(database: try location.open(migrations: NotifySchema.migrations))
    commands = NotifyCommands(store: store, clock: clock, updateLifetime: 600)
  }

  func update(_ version: Int64, _ status: TrackingStatus = .picking, id: String? = nil) throws
    -> PendingUpdates.Queued
  {
    try commands.queueUpdate(
      TrackingUpdated(
        userId: "u1", hub: "h1",
        snapshot: TrackingSnapshot(
          orderId: "o1", version: version, status: status, problem: nil, eta: nil, rider: nil,
          destination: nil, generatedAt: clock.now()),
        changed: [.stage], previousStatus: .placed),
      occurredAt: clock.now(), messageID: id ?? "u-\(version)", consumer: "notify")
  }

  func token(_ token: String, sequence: Int64, id: String) throws -> Bool {
    try commands.recordActivityToken(
      LiveActivityToken(orderId: "o1", userId: "u1", hub: "h1", token: token), sequence: sequence,
      messageID: id, consumer: "notify")
  }

  @Test func theNewestUpdateWaitsAndEachMessageCountsOnce() throws {
    #expect(try update(2) == .queued)
    #expect(try update(2) == .duplicate)
    #expect(try update(1) == .stale)
    #expect(try update(3) == .coalesced)
    #expect(try store.pendingCount() == 1)
    #expect(try store.database.read { try store.pendingVersion("o1", in: $0) } == 3)
  }

  /// What a second replica's consumer does when it read "nothing pending" before the first
  /// replica's newer update committed: its older update must not replace the newer one.
  @Test func anOlderUpdateSavedAfterANewerOneDoesNotReplaceIt() throws {
    #expect(try update(3) == .queued)
    let older = TrackingUpdated(
      userId: "u1", hub: "h1",
      snapshot: TrackingSnapshot(
        orderId: "o1", version: 2, status: .picking, problem: nil, eta: nil, rider: nil, destination: nil,
        generatedAt: clock.now()),
      changed: [.stage], previousStatus: .placed)
    let saved = try store.database.write {
      try store.savePending(
        older, occurredAt: clock.now(), at: clock.now(), expiresAt: clock.now() + 600, in: $0)
    }
    #expect(!saved)
    #expect(try store.database.read { try store.pendingVersion("o1", in: $0) } == 3)
  }

  /// The intake's one read: the activity's handled version and token, and what is pending.
  @Test func oneReadTellsWhatTheActivityHandledAndWhatIsPending() throws {
    let none = try store.database.read { try store.versions("o1", in: $0) }
    #expect(none.handled == nil && none.pending == nil)
    _ = try update(2)
    let pendingOnly = try store.database.read { try store.versions("o1", in: $0) }
    #expect(pendingOnly.handled == nil && pendingOnly.pending == 2)
    #expect(try token("aa", sequence: 1, id: "t1"))
    let both = try store.database.read { try store.versions("o1", in: $0) }
    #expect(both.handled?.version == 0 && both.handled?.hasToken == true && both.handled?.ended == false)
    #expect(both.pending == 2)
  }

  /// A push's outcome is recorded against the version it carried: a newer update that replaced
  /// it meanwhile is neither removed nor given its attempt.
  @Test func recordingAnOlderVersionLeavesTheNewerPendingUpdate() throws {
    _ = try update(3)
    try store.database.write {
      try store.retryPending("o1", version: 2, at: clock.now() + 60, in: $0)
      try store.deletePending("o1", version: 2, in: $0)
    }
    #expect(try store.database.read { try store.pendingVersion("o1", in: $0) } == 3)
    #expect(try store.dueUpdates(at: clock.now(), limit: 10).isEmpty, "no activity yet")
    #expect(try token("aa", sequence: 1, id: "t1"))
    #expect(try store.dueUpdates(at: clock.now(), limit: 10).first?.attempts == 0)
    try store.database.write { try store.deletePending("o1", version: 3, in: $0) }
    #expect(try store.pendingCount() == 0)
  }

  /// An activity updated faster than pushes go out keeps its place among the due updates: each
  /// newer update replaces the pending one without sending it to the back.
  @Test func aReplacedUpdateKeepsItsPlaceInLine() throws {
    func queue(_ order: String, _ version: Int64) throws {
      _ = try commands.queueUpdate(
        TrackingUpdated(
          userId: "u1", hub: "h1",
          snapshot: TrackingSnapshot(
            orderId: order, version: version, status: .picking, problem: nil, eta: nil, rider: nil,
            destination: nil, generatedAt: clock.now()),
          changed: [.eta], previousStatus: .picking),
        occurredAt: clock.now(), messageID: "\(order)-\(version)", consumer: "notify")
    }
    for order in ["o1", "o2"] {
      _ = try commands.recordActivityToken(
        LiveActivityToken(orderId: order, userId: "u1", hub: "h1", token: "t-\(order)"),
        messageID: "t-\(order)",
        consumer: "notify")
    }
    try queue("o1", 1)
    clock.advance(by: 1)
    try queue("o2", 1)
    clock.advance(by: 1)
    try queue("o1", 2)
    let due = try store.dueUpdates(at: clock.now(), limit: 10)
    #expect(due.map(\.orderId) == ["o1", "o2"])
    #expect(due.first?.snapshot.version == 2)
    // A retried update replaced by a newer one is due at once, not at its retry time.
    try store.database.write { try store.retryPending("o2", version: 1, at: clock.now() + 60, in: $0) }
    #expect(try store.dueUpdates(at: clock.now(), limit: 10).map(\.orderId) == ["o1"])
    try queue("o2", 2)
    #expect(try store.dueUpdates(at: clock.now(), limit: 10).map(\.orderId) == ["o1", "o2"])
  }

  @Test func anUpdateWaitsForATokenAndIsDueOnceOneArrives() throws {
    _ = try update(1)
    #expect(try store.dueUpdates(at: clock.now(), limit: 10).isEmpty, "no activity yet")
    clock.advance(by: 5)
    #expect(try token("aa", sequence: 1, id: "t1"))
    #expect(try !token("aa", sequence: 1, id: "t1"), "the same message again")
    let due = try store.dueUpdates(at: clock.now(), limit: 10)
    #expect(due.map(\.token) == ["aa"])
    #expect(due.first?.expiresAt == Date(timeIntervalSince1970: 1_790_000_600))
  }

  @Test func anOlderTokenEventDoesNotReplaceANewerOne() throws {
    _ = try token("bb", sequence: 2, id: "t2")
    _ = try token("aa", sequence: 1, id: "t1")
    #expect(try store.activity("o1")?.token == "bb")
    _ = try token("bb", sequence: 3, id: "t3")
    #expect(try store.database.read { try store.activityToken("o1", in: $0) }?.sequence == 3)
    _ = try token("cc", sequence: 4, id: "t4")
    #expect(try store.activity("o1")?.token == "cc")
  }

  @Test func alertsGoToEveryDeviceOfTheUserOnce() throws {
    try commands.registerDevice("d1", user: "u1")
    try commands.registerDevice("d2", user: "u1")
    try commands.registerDevice("d3", user: "u2")
    #expect(
      try commands.queueAlert(
        .orderConfirmed, user: "u1", orderId: "o1", occurredAt: clock.now(), messageID: "c1",
        consumer: "notify"))
    #expect(
      try !commands.queueAlert(
        .orderConfirmed, user: "u1", orderId: "o1", occurredAt: clock.now(), messageID: "c1",
        consumer: "notify"))
    #expect(try store.dueAlerts(at: clock.now(), limit: 10).map(\.token).sorted() == ["d1", "d2"])
    #expect(try commands.removeDevice("d1", user: "u1"))
    #expect(try !commands.removeDevice("d1", user: "u1"))
    #expect(try store.dueAlerts(at: clock.now(), limit: 10).map(\.token) == ["d2"])
  }

  @Test func aDeliveredOrderWithoutAnActivityAlertsTheDevicesAndRefreshesThem() throws {
    try commands.registerDevice("d1", user: "u1")
    _ = try update(5, .delivered)
    let due = try store.dueAlerts(at: clock.now(), limit: 10)
    #expect(due.map(\.kind) == [.alert, .refresh(status: "delivered")])
    #expect(due.first?.text == .delivered)
  }

  @Test func aFinishedOrderWithAnActivityOnlyRefreshesTheDevicesOnce() throws {
    try commands.registerDevice("d1", user: "u1")
    try commands.registerDevice("d2", user: "u1")
    #expect(try token(String(repeating: "ab", count: 32), sequence: 1, id: "t1"))
    _ = try update(4, .onTheWay)
    _ = try update(5, .cancelled)
    // The same event again: nothing more.
    _ = try update(5, .cancelled)
    let due = try store.dueAlerts(at: clock.now(), limit: 10)
    #expect(due.map(\.kind) == [.refresh(status: "cancelled"), .refresh(status: "cancelled")])
    #expect(due.map(\.token).sorted() == ["d1", "d2"])
  }
}
