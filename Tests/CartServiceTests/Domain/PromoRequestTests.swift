import Foundation
import GrocerContracts
import GrocerCore
import Testing

@testable import CartService

@Suite struct PromoRequestTests {
  static let now = Date(timeIntervalSince1970: 1_000_000)
  static let spring = Promotion(code: "SPRING", kind: .percentOff, percent: 10)

  @Test func aKnownCodeIsStoredInItsNormalForm() throws {
    let request = PromoRequest(code: " spring ")
    #expect(request.lookup == "SPRING")
    #expect(try request.accepted(Self.spring, at: "h1", now: Self.now) == "SPRING")
  }

  @Test func noCodeTakesTheCodeOff() throws {
    let request = PromoRequest(code: nil)
    #expect(request.lookup == nil)
    #expect(try request.accepted(nil, at: "h1", now: Self.now) == nil)
  }

  @Test func anUnknownOrImpossibleCodeIsRefusedAsTyped() {
    #expect(throws: CartError.unknownPromotion("NOPE")) {
      try PromoRequest(code: " NOPE").accepted(nil, at: "h1", now: Self.now)
    }
    let impossible = PromoRequest(code: "no way!")
    #expect(impossible.lookup == nil)
    #expect(throws: CartError.unknownPromotion("no way!")) {
      try impossible.accepted(Self.spring, at: "h1", now: Self.now)
    }
  }

  @Test func anExpiredCodeIsRefused() {
    let expired = Promotion(code: "OLD", kind: .percentOff, percent: 5, validUntil: Self.now)
    #expect(throws: CartError.promotionExpired("OLD")) {
      try PromoRequest(code: "old").accepted(expired, at: "h1", now: Self.now)
    }
  }

  @Test func aCodeForOtherHubsIsRefused() {
    let elsewhere = Promotion(code: "H2", kind: .percentOff, percent: 5, hubs: ["h2"])
    #expect(throws: CartError.promotionNotValidAtHub(code: "H2", hub: "h1")) {
      try PromoRequest(code: "h2").accepted(elsewhere, at: "h1", now: Self.now)
    }
  }

  @Test func aMinimumNotReachedYetIsStillAccepted() throws {
    let welcome = Promotion(
      code: "WELCOME5", kind: .amountOff, amount: Money(minorUnits: 500),
      minimumSubtotal: Money(minorUnits: 2000))
    #expect(try PromoRequest(code: "welcome5").accepted(welcome, at: "h1", now: Self.now) == "WELCOME5")
  }
}
