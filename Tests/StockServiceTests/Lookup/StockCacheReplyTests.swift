import Foundation
import GrocerContracts
import Testing

@testable import StockService

/// A reply is remembered only for a query asked before: as a repeated request does.
private func rememberAsked(_ cache: StockCache, _ reply: StockReply, query: String, lookup: StockLookup) {
  cache.remember(reply, hub: "h1", query: query, lookup: lookup)
  cache.remember(reply, hub: "h1", query: query, lookup: lookup)
}

/// Whole replies remembered by the cache: served only while no count they hold has moved and
/// their oldest count is fresh.
@Suite struct StockCacheReplyTests {
  let start = Date(timeIntervalSinceReferenceDate: 800_000_000)

  private func built(_ cache: StockCache, skus: [SKU] = ["p1", "p2"], at now: Date) -> (
    StockReply, StockLookup
  ) {
    var lookup = cache.lookup(hub: "h1", skus: skus, now: now)
    let rows = skus.enumerated().map { StockRow(sku: $1, count: 10 + $0, sequence: 1) }
    cache.fill(hub: "h1", rows: rows, readAt: now, generation: lookup.generation)
    lookup.resolve(skus: skus, rows: rows, readAt: now)
    return (
      StockReplyWriter.reply(skus: skus, lookup: lookup, now: now, timeToLive: cache.timeToLive), lookup
    )
  }

  @Test func onlyAQueryAskedAgainIsRemembered() {
    let cache = StockCache(timeToLive: 30)
    let (reply, lookup) = built(cache, at: start)
    cache.remember(reply, hub: "h1", query: "ids=p1,p2", lookup: lookup)
    #expect(cache.rememberedReply(hub: "h1", query: "ids=p1,p2", now: start) == nil)
    // A stream of queries each asked once remembers none of them and forgets no reply.
    for index in 0..<(2 * StockCache.Held.askedBound) {
      cache.remember(reply, hub: "h1", query: "ids=p1,p2&once=\(index)", lookup: lookup)
    }
    #expect(cache.rememberedReply(hub: "h1", query: "ids=p1,p2&once=7", now: start) == nil)
    rememberAsked(cache, reply, query: "ids=p1,p2", lookup: lookup)
    #expect(cache.rememberedReply(hub: "h1", query: "ids=p1,p2", now: start)?.body == reply.body)
  }

  @Test func aRememberedReplyIsServedWithTheRemainingFreshness() {
    let cache = StockCache(timeToLive: 30)
    let (reply, lookup) = built(cache, at: start)
    rememberAsked(cache, reply, query: "ids=p1,p2", lookup: lookup)
    let later = cache.rememberedReply(hub: "h1", query: "ids=p1,p2", now: start + 12.5)
    #expect(later?.body == reply.body)
    #expect(later?.asOf == start)
    #expect(later?.maxAge == 17)
    #expect(cache.rememberedReply(hub: "h1", query: "ids=p2,p1", now: start) == nil)
    #expect(cache.rememberedReply(hub: "h2", query: "ids=p1,p2", now: start) == nil)
  }

  @Test func aRememberedReplyExpiresWithItsOldestCount() {
    let cache = StockCache(timeToLive: 30)
    let (reply, lookup) = built(cache, at: start)
    rememberAsked(cache, reply, query: "ids=p1,p2", lookup: lookup)
    #expect(cache.rememberedReply(hub: "h1", query: "ids=p1,p2", now: start + 30) == nil)
  }

  @Test func anInvalidationForgetsTheReplies() {
    let cache = StockCache(timeToLive: 30)
    let (reply, lookup) = built(cache, at: start)
    rememberAsked(cache, reply, query: "ids=p1,p2", lookup: lookup)
    cache.invalidate(hub: "h1", sku: "p2", sequence: 2)
    #expect(cache.rememberedReply(hub: "h1", query: "ids=p1,p2", now: start + 1) == nil)
  }

  @Test func aReplyBuiltBeforeAnInvalidationIsNeverRemembered() {
    let cache = StockCache(timeToLive: 30)
    let (reply, lookup) = built(cache, at: start)
    cache.invalidate(hub: "h1", sku: "p1", sequence: 5)  // races the request
    rememberAsked(cache, reply, query: "ids=p1,p2", lookup: lookup)
    #expect(cache.rememberedReply(hub: "h1", query: "ids=p1,p2", now: start + 1) == nil)
  }

  @Test func removeAllForgetsTheReplies() {
    let cache = StockCache(timeToLive: 30)
    let (reply, lookup) = built(cache, at: start)
    rememberAsked(cache, reply, query: "ids=p1,p2", lookup: lookup)
    cache.removeAll()
    #expect(cache.rememberedReply(hub: "h1", query: "ids=p1,p2", now: start + 1) == nil)
  }

  @Test func theRepliesOfAHubAreBoundedAndForgottenTogether() {
    let cache = StockCache(timeToLive: 30)
    let (reply, lookup) = built(cache, at: start)
    for index in 0..<StockCache.maximumRepliesPerHub {
      rememberAsked(cache, reply, query: "ids=p1,p2&n=\(index)", lookup: lookup)
    }
    #expect(cache.rememberedReply(hub: "h1", query: "ids=p1,p2&n=0", now: start) != nil)
    // One more than the bound: the hub's replies are forgotten and the new one kept.
    rememberAsked(cache, reply, query: "ids=p1,p2", lookup: lookup)
    #expect(cache.rememberedReply(hub: "h1", query: "ids=p1,p2&n=0", now: start) == nil)
    #expect(cache.rememberedReply(hub: "h1", query: "ids=p1,p2", now: start)?.body == reply.body)
    // Replacing a reply does not count twice.
    for _ in 0..<10 { cache.remember(reply, hub: "h1", query: "ids=p1,p2", lookup: lookup) }
    for index in 0..<(StockCache.maximumRepliesPerHub - 2) {
      rememberAsked(cache, reply, query: "ids=p2&n=\(index)", lookup: lookup)
    }
    #expect(cache.rememberedReply(hub: "h1", query: "ids=p1,p2", now: start) != nil)
  }
}

@Suite struct StockCacheBoundsTests {
  @Test func aRefreshWithAnotherCountForgetsTheRepliesThatHoldTheOldOne() {
    let cache = StockCache(timeToLive: 30)
    let start = Date(timeIntervalSinceReferenceDate: 800_000_000)
    var lookup = cache.lookup(hub: "h1", skus: ["p1"], now: start)
    let rows = [StockRow(sku: "p1", count: 5, sequence: 7)]
    cache.fill(hub: "h1", rows: rows, readAt: start, generation: lookup.generation)
    lookup.resolve(skus: ["p1"], rows: rows, readAt: start)
    let reply = StockReplyWriter.reply(skus: ["p1"], lookup: lookup, now: start, timeToLive: 30)
    rememberAsked(cache, reply, query: "ids=p1", lookup: lookup)
    // Another replica changed it; its event is late, but a read brought the new count here.
    cache.fill(
      hub: "h1", rows: [StockRow(sku: "p1", count: 3, sequence: 8)], readAt: start + 1,
      generation: cache.generation)
    #expect(cache.rememberedReply(hub: "h1", query: "ids=p1", now: start + 2) == nil)
  }

  @Test func aFillOfManyRowsStoresThemAllInChunks() {
    let cache = StockCache(timeToLive: 30)
    let now = Date(timeIntervalSinceReferenceDate: 800_000_000)
    let skus = (0..<(StockCache.fillChunk * 3 + 7)).map { "p\($0)" }
    let before = cache.lookup(hub: "h1", skus: skus, now: now)
    cache.fill(
      hub: "h1", rows: skus.enumerated().map { StockRow(sku: $1, count: $0, sequence: 1) }, readAt: now,
      generation: before.generation)
    let after = cache.lookup(hub: "h1", skus: skus, now: now + 1)
    #expect(after.isComplete)
    #expect(cache.entryCount == skus.count)
  }

  @Test func theEntriesOfAHubAreBounded() {
    let cache = StockCache(timeToLive: 30)
    let now = Date(timeIntervalSinceReferenceDate: 800_000_000)
    for batch in 0..<6 {
      let rows = (0..<10_000).map { StockRow(sku: "x\(batch)-\($0)", count: nil, sequence: 0) }
      cache.fill(hub: "h1", rows: rows, readAt: now, generation: cache.generation)
    }
    #expect(cache.entryCount <= StockCache.maximumEntriesPerHub)
  }
}
