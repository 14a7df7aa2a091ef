import Foundation
import GrocerContracts
import GrocerCore
import Testing

@testable import CartService

@Suite struct CartReplyCacheTests {
  let now = Date(timeIntervalSince1970: 1_800_000_000)

  func view(version: Int64, adjustments: [Int64] = []) -> CartView {
    CartView(
      hub: "h1", version: version, lines: [],
      adjustments: adjustments.map { CartAdjustment(.outOfStock(sku: "p\($0)"), version: $0) }, promo: nil,
      totals: .zero("EUR"), blocker: nil)
  }

  func decoded(_ bytes: [UInt8]?) throws -> CartView {
    try JSON.decode(CartView.self, from: Data(try #require(bytes)))
  }

  @Test func aRememberedReplyIsServedWithTheAdjustmentsAskedFor() throws {
    let cache = CartReplyCache()
    cache.remember(
      view(version: 3, adjustments: [2, 3]), user: "u", freshUntil: now + 60, ticket: cache.ticket(hub: "h1"))
    #expect(try decoded(cache.reply(user: "u", hub: "h1", seenVersion: nil, now: now)).adjustments.count == 2)
    #expect(try decoded(cache.reply(user: "u", hub: "h1", seenVersion: 1, now: now)).adjustments.count == 2)
    #expect(try decoded(cache.reply(user: "u", hub: "h1", seenVersion: 3, now: now)).adjustments.isEmpty)
    // Some but not all newer: left to the database path.
    #expect(cache.reply(user: "u", hub: "h1", seenVersion: 2, now: now) == nil)
    #expect(cache.reply(user: "other", hub: "h1", seenVersion: nil, now: now) == nil)
  }

  @Test func aReadThatStartedBeforeAChangeIsNotRemembered() {
    let cache = CartReplyCache()
    let ticket = cache.ticket(hub: "h1")
    cache.cartChanged(user: "u", hub: "h1", version: 4)
    cache.remember(view(version: 3), user: "u", freshUntil: now + 60, ticket: ticket)
    #expect(cache.reply(user: "u", hub: "h1", seenVersion: nil, now: now) == nil)
    cache.remember(view(version: 4), user: "u", freshUntil: now + 60, ticket: cache.ticket(hub: "h1"))
    #expect(cache.reply(user: "u", hub: "h1", seenVersion: nil, now: now) != nil)
    cache.cartChanged(user: "u", hub: "h1", version: 5)
    #expect(cache.reply(user: "u", hub: "h1", seenVersion: nil, now: now) == nil)
  }

  @Test func aHubChangeOrTimeDropsTheReplies() {
    let cache = CartReplyCache()
    let stale = cache.ticket(hub: "h1")
    cache.remember(view(version: 1), user: "u", freshUntil: now + 60, ticket: cache.ticket(hub: "h1"))
    cache.hubChanged("h1")
    #expect(cache.reply(user: "u", hub: "h1", seenVersion: nil, now: now) == nil)
    cache.remember(view(version: 1), user: "u", freshUntil: now + 60, ticket: stale)
    #expect(cache.reply(user: "u", hub: "h1", seenVersion: nil, now: now) == nil)
    cache.remember(view(version: 1), user: "u", freshUntil: now + 60, ticket: cache.ticket(hub: "h1"))
    #expect(cache.reply(user: "u", hub: "h1", seenVersion: nil, now: now + 59) != nil)
    #expect(cache.reply(user: "u", hub: "h1", seenVersion: nil, now: now + 60) == nil)
  }

  @Test func memoryStaysBounded() {
    let cache = CartReplyCache(capacity: 10)
    for index in 0..<25 {
      cache.remember(
        view(version: 1), user: "u\(index)", freshUntil: now + 60, ticket: cache.ticket(hub: "h1"))
      cache.cartChanged(user: "w\(index)", hub: "h1", version: 1)
    }
    #expect(cache.count <= 10)
  }
}
