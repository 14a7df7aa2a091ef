import Foundation
import GrocerContracts
import Testing

@testable import TrackingService

/// What the snapshot says of the lock screen, from push outcomes arriving in any order.
@Suite struct LiveActivityDeliveryTests {
  let token = "aa01"
  let t0 = Date(timeIntervalSince1970: 1_790_000_000)

  func outcome(
    _ status: Int?, at offset: TimeInterval, version: Int64, event: String = "update", reason: String? = nil,
    token: String? = nil, kind: PushOutcome.TokenKind = .liveActivity
  ) -> PushOutcome {
    PushOutcome(
      pushId: "p\(version)", tokenKind: kind, token: token ?? self.token, orderId: "o1", userId: "u1",
      pushType: "liveactivity", event: event, version: version, priority: 10, status: status, reason: reason,
      latencyMs: 40, answeredAt: t0 + offset,
      staleDate: status == 200 && event == "update" ? t0 + offset + 180 : nil)
  }

  @Test func withoutATokenThereIsNoActivity() {
    let delivery = LiveActivityDelivery()
    #expect(delivery.view(hasToken: false, at: t0) == LiveActivityView(state: .none, lastPushAt: nil))
    #expect(delivery.view(hasToken: true, at: t0) == LiveActivityView(state: .current, lastPushAt: nil))
  }

  @Test func aDeliveredUpdateIsCurrentUntilItsStaleDate() throws {
    let delivery = try #require(
      LiveActivityDelivery().applying(outcome(200, at: 0, version: 2), currentToken: token))
    #expect(delivery.view(hasToken: true, at: t0 + 10) == LiveActivityView(state: .current, lastPushAt: t0))
    #expect(delivery.viewChanges(hasToken: true, after: t0 + 10) == t0 + 180)
    #expect(delivery.view(hasToken: true, at: t0 + 180).state == .stale)
    #expect(delivery.viewChanges(hasToken: true, after: t0 + 180) == nil)
    #expect(delivery.revision == 1)
  }

  @Test func aFailureMakesItStaleUntilTheNextDelivery() throws {
    var delivery = try #require(
      LiveActivityDelivery().applying(outcome(200, at: 0, version: 2), currentToken: token))
    delivery = try #require(
      delivery.applying(outcome(nil, at: 5, version: 3, reason: "NoAnswer"), currentToken: token))
    #expect(delivery.view(hasToken: true, at: t0 + 6) == LiveActivityView(state: .stale, lastPushAt: t0))
    delivery = try #require(delivery.applying(outcome(200, at: 9, version: 4), currentToken: token))
    #expect(
      delivery.view(hasToken: true, at: t0 + 10) == LiveActivityView(state: .current, lastPushAt: t0 + 9))
  }

  @Test func theEndIsFinalAndAGoneTokenIsNoActivity() throws {
    let ended = try #require(
      LiveActivityDelivery().applying(outcome(200, at: 0, version: 6, event: "end"), currentToken: token))
    #expect(ended.view(hasToken: true, at: t0 + 999).state == .ended)
    #expect(ended.staleAt == nil)
    let gone = try #require(
      LiveActivityDelivery().applying(
        outcome(410, at: 0, version: 2, reason: "Unregistered"), currentToken: token))
    #expect(gone.view(hasToken: true, at: t0).state == .none)
    let bad = try #require(
      LiveActivityDelivery().applying(
        outcome(400, at: 0, version: 2, reason: "BadDeviceToken"), currentToken: token))
    #expect(bad.view(hasToken: true, at: t0).state == .none)
    // A new activity (token) starts again, at a higher revision.
    let restarted = gone.restarted()
    #expect(
      restarted.view(hasToken: true, at: t0).state == .current && restarted.revision == gone.revision + 1)
  }

  @Test func olderOutcomesOtherTokensAndAlertsChangeNothing() throws {
    let delivery = try #require(
      LiveActivityDelivery().applying(outcome(200, at: 10, version: 4), currentToken: token))
    #expect(
      delivery.applying(outcome(nil, at: 9, version: 5, reason: "NoAnswer"), currentToken: token) == nil)
    #expect(
      delivery.applying(outcome(503, at: 10, version: 3), currentToken: token) == nil, "same second, older")
    #expect(
      delivery.applying(outcome(503, at: 10, version: 5), currentToken: token) != nil, "same second, newer")
    #expect(delivery.applying(outcome(410, at: 11, version: 5, token: "bb02"), currentToken: token) == nil)
    #expect(delivery.applying(outcome(200, at: 11, version: 5, kind: .device), currentToken: token) == nil)
    #expect(delivery.applying(outcome(200, at: 11, version: 5), currentToken: nil) == nil)
  }
}
