import Foundation
import Testing

@testable import NotifyGateway

/// What an APNs answer means for a due push, and the retry backoff, without a transport.
@Suite struct PushDeliveryTests {
  static let now = Date(timeIntervalSince1970: 1_790_000_000)
  static let expires = now + 600
  static let state = ActivityState(startedAt: now)

  @Test func theBackoffDoublesFromHalfASecondUpToThirtySeconds() {
    let waits = (0..<12).map {
      PushDelivery.retryTime(attempts: $0, expiresAt: Self.expires, now: Self.now, jitter: 1)!
        .timeIntervalSince(Self.now)
    }
    #expect(waits == [0.5, 1, 2, 4, 8, 16, 30, 30, 30, 30, 30, 30])
  }

  @Test func theJitterScalesTheWaitBetweenHalfAndAll() {
    #expect(
      PushDelivery.retryTime(attempts: 2, expiresAt: Self.expires, now: Self.now, jitter: 0.5) == Self.now + 1
    )
    #expect(PushDelivery.jitter(0) == 0.5)
    #expect(PushDelivery.jitter(999) == 0.5 + 999.0 / 2000)
    #expect(PushDelivery.jitter(1000) == 0.5)
    for draw in [UInt64(1), 7, 123_456_789, .max] {
      let jitter = PushDelivery.jitter(draw)
      #expect(jitter >= 0.5 && jitter < 1)
    }
  }

  @Test func noRetryAtOrAfterTheExpiration() {
    #expect(PushDelivery.retryTime(attempts: 0, expiresAt: Self.now + 0.5, now: Self.now, jitter: 1) == nil)
    #expect(PushDelivery.retryTime(attempts: 0, expiresAt: Self.now + 0.51, now: Self.now, jitter: 1) != nil)
    #expect(PushDelivery.retryTime(attempts: 10, expiresAt: Self.now + 29, now: Self.now, jitter: 1) == nil)
  }

  @Test func aPushIsWorthSendingOnlyBeforeItExpires() {
    #expect(PushDelivery.isWorthSending(expiresAt: Self.expires, now: Self.now))
    #expect(!PushDelivery.isWorthSending(expiresAt: Self.now, now: Self.now))
    #expect(!PushDelivery.isWorthSending(expiresAt: Self.now - 1, now: Self.now))
  }

  @Test func eachAnswerOfAnUpdateHasItsOutcome() {
    func outcome(_ answer: PushDelivery.Answer, expires: Date = Self.expires) -> PushDelivery.UpdateOutcome {
      PushDelivery.outcome(
        of: answer, next: Self.state, attempts: 1, expiresAt: expires, now: Self.now, jitter: 1)
    }
    #expect(outcome(.delivered) == .handled(Self.state))
    #expect(outcome(.tokenGone) == .tokenGone)
    #expect(outcome(.refused) == .dropped)
    #expect(outcome(.tryAgain) == .retry(at: Self.now + 1))
    #expect(outcome(.tryAgain, expires: Self.now + 1) == .dropped, "the retry would come at the expiration")
  }

  @Test func eachAnswerOfAnAlertHasItsOutcome() {
    func outcome(_ answer: PushDelivery.Answer, expires: Date = Self.expires) -> PushDelivery.AlertOutcome {
      PushDelivery.outcome(ofAlert: answer, attempts: 0, expiresAt: expires, now: Self.now, jitter: 1)
    }
    #expect(outcome(.delivered) == .delivered)
    #expect(outcome(.tokenGone) == .tokenGone)
    #expect(outcome(.refused) == .dropped)
    #expect(outcome(.tryAgain) == .retry(at: Self.now + 0.5))
    #expect(outcome(.tryAgain, expires: Self.now + 0.5) == .dropped)
  }
}
