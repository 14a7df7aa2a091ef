import Foundation
import GrocerCore
import Testing

@testable import StockService

@Suite struct StockCacheTests {
  let t0 = date("2026-10-20T18:42:00Z")

  func filled(_ cache: StockCache, at readAt: Date, _ rows: [StockRow], hub: String = "h1") {
    cache.fill(hub: hub, rows: rows, readAt: readAt, generation: cache.generation)
  }

  @Test func anEmptyCacheMissesEverythingInRequestOrder() {
    let lookup = StockCache().lookup(hub: "h1", skus: ["p2", "p1"], now: t0)
    #expect(lookup.misses == ["p2", "p1"])
    #expect(lookup.entries == [.miss, .miss])
    #expect(!lookup.isComplete)
  }

  @Test func entriesAreFreshForTheTimeToLiveOnly() {
    let cache = StockCache(timeToLive: 30)
    filled(
      cache, at: t0,
      [StockRow(sku: "p1", count: 12, sequence: 1), StockRow(sku: "p9", count: nil, sequence: 0)])
    let fresh = cache.lookup(hub: "h1", skus: ["p1", "p9", "p2"], now: t0.addingTimeInterval(29.9))
    #expect(fresh.entries == [.count(12, readAt: t0), .unknown(readAt: t0), .miss])
    #expect(fresh.misses == ["p2"])
    let stale = cache.lookup(hub: "h1", skus: ["p1", "p9"], now: t0.addingTimeInterval(30))
    #expect(stale.misses == ["p1", "p9"])
    #expect(cache.lookup(hub: "h2", skus: ["p1"], now: t0).misses == ["p1"])
  }

  @Test func anInvalidationDropsTheEntryAndFencesOffOlderFills() {
    let cache = StockCache()
    filled(cache, at: t0, [StockRow(sku: "p1", count: 12, sequence: 4)])
    cache.invalidate(hub: "h1", sku: "p1", sequence: 5)
    #expect(cache.lookup(hub: "h1", skus: ["p1"], now: t0).misses == ["p1"])
    // A read that started before the event saw version 4: it must not put 12 back.
    filled(cache, at: t0, [StockRow(sku: "p1", count: 12, sequence: 4)])
    #expect(cache.lookup(hub: "h1", skus: ["p1"], now: t0).misses == ["p1"])
    filled(cache, at: t0.addingTimeInterval(1), [StockRow(sku: "p1", count: 9, sequence: 5)])
    #expect(
      cache.lookup(hub: "h1", skus: ["p1"], now: t0.addingTimeInterval(2)).entries == [
        .count(9, readAt: t0.addingTimeInterval(1))
      ])
  }

  @Test func anEventOlderThanTheCachedVersionIsIgnored() {
    let cache = StockCache()
    filled(cache, at: t0, [StockRow(sku: "p1", count: 7, sequence: 9)])
    cache.invalidate(hub: "h1", sku: "p1", sequence: 8)
    #expect(cache.lookup(hub: "h1", skus: ["p1"], now: t0).entries == [.count(7, readAt: t0)])
    filled(cache, at: t0, [StockRow(sku: "p1", count: 3, sequence: 8)])
    #expect(cache.lookup(hub: "h1", skus: ["p1"], now: t0).entries == [.count(7, readAt: t0)])
  }

  @Test func anUnknownProductCreatedLaterIsNotHiddenByTheCachedUnknown() {
    let cache = StockCache()
    filled(cache, at: t0, [StockRow(sku: "p9", count: nil, sequence: 0)])
    cache.invalidate(hub: "h1", sku: "p9", sequence: 1)
    #expect(cache.lookup(hub: "h1", skus: ["p9"], now: t0).misses == ["p9"])
  }

  @Test func removeAllEmptiesTheCacheAndDropsFillsThatBeganBefore() {
    let cache = StockCache()
    filled(cache, at: t0, [StockRow(sku: "p1", count: 1, sequence: 1)])
    let before = cache.lookup(hub: "h1", skus: ["p2"], now: t0)
    cache.invalidate(hub: "h1", sku: "p3", sequence: 9)
    cache.removeAll()
    #expect(cache.entryCount == 0)
    cache.fill(
      hub: "h1", rows: [StockRow(sku: "p2", count: 5, sequence: 1)], readAt: t0, generation: before.generation
    )
    #expect(cache.lookup(hub: "h1", skus: ["p1", "p2"], now: t0).misses == ["p1", "p2"])
    filled(cache, at: t0, [StockRow(sku: "p3", count: 2, sequence: 1)])
    #expect(cache.lookup(hub: "h1", skus: ["p3"], now: t0).entries == [.count(2, readAt: t0)])
  }

  @Test func aResolvedLookupWritesTheReplyWithTheOldestReadTimeAndRemainingFreshness() throws {
    let cache = StockCache(timeToLive: 30)
    filled(cache, at: t0, [StockRow(sku: "p1", count: 12, sequence: 1)])
    let now = t0.addingTimeInterval(10.5)
    let skus = ["p1", "p2", "p3"]
    var lookup = cache.lookup(hub: "h1", skus: skus, now: now)
    #expect(lookup.misses == ["p2", "p3"])
    let rows = [StockRow(sku: "p2", count: 0, sequence: 3), StockRow(sku: "p3", count: nil, sequence: 0)]
    cache.fill(hub: "h1", rows: rows, readAt: now, generation: lookup.generation)
    lookup.resolve(skus: skus, rows: rows, readAt: now)
    let reply = StockReplyWriter.reply(skus: skus, lookup: lookup, now: now, timeToLive: cache.timeToLive)
    #expect(
      String(decoding: reply.body, as: UTF8.self)
        == #"{"asOf":"2026-10-20T18:42:00Z","stock":{"p1":12,"p2":0}}"#)
    #expect(reply.asOf == t0)
    #expect(reply.maxAge == 19)
    let next = cache.lookup(hub: "h1", skus: ["p3", "p2"], now: now)
    #expect(next.entries == [.unknown(readAt: now), .count(0, readAt: now)])
  }

  @Test(arguments: [(0.0, 30), (0.4, 29), (29.2, 0), (30.0, 0), (45.0, 0)])
  func maxAgeIsTheFlooredRemainingFreshness(age: Double, maxAge: Int) {
    let cache = StockCache(timeToLive: 30)
    filled(cache, at: t0, [StockRow(sku: "p1", count: 1, sequence: 1)])
    var lookup = cache.lookup(hub: "h1", skus: ["p1"], now: t0)
    lookup.resolve(skus: ["p1"], rows: [], readAt: t0)
    let reply = StockReplyWriter.reply(
      skus: ["p1"], lookup: lookup, now: t0.addingTimeInterval(age), timeToLive: 30)
    #expect(reply.maxAge == maxAge)
  }

  @Test func concurrentLookupsFillsAndInvalidationsStayConsistent() async {
    let cache = StockCache()
    let skus = (1...50).map { "p\($0)" }
    await withTaskGroup(of: Void.self) { group in
      for worker in 0..<4 {
        group.addTask {
          for round in 0..<500 {
            let sku = skus[(round * 7 + worker) % skus.count]
            let lookup = cache.lookup(
              hub: "h\(worker % 2)", skus: skus, now: Date(timeIntervalSince1970: 1_000))
            cache.fill(
              hub: "h\(worker % 2)", rows: [StockRow(sku: sku, count: round, sequence: Int64(round))],
              readAt: Date(timeIntervalSince1970: 1_000), generation: lookup.generation)
            if round % 10 == 0 { cache.invalidate(hub: "h\(worker % 2)", sku: sku, sequence: Int64(round)) }
          }
        }
      }
    }
    #expect(cache.entryCount <= 100)
    #expect(cache.entryCount > 0)
  }
}

@Suite struct StockReplyWriterTests {
  @Test(arguments: [0, 7, 10, 99, 1_000_000, -42, Int.max])
  func integersAreWrittenInDecimal(value: Int) {
    var body: [UInt8] = []
    StockReplyWriter.appendInteger(value, to: &body)
    #expect(String(decoding: body, as: UTF8.self) == String(value))
  }

  @Test(arguments: [0.0, 1_792_521_720.7, 951_782_400, 4_102_444_799, -86_401])
  func timestampsMatchGrocerCore(seconds: Double) {
    var body: [UInt8] = []
    let date = Date(timeIntervalSince1970: seconds)
    StockReplyWriter.appendTimestamp(date, to: &body)
    #expect(String(decoding: body, as: UTF8.self) == Timestamp.string(from: date))
  }

  @Test(arguments: ["p1", "a\"b", "back\\slash", "tab\tnew\nline\u{1}", "Grüße", "emoji🥛", ""])
  func stringsAreEscapedSoJSONParsersReadThemBack(text: String) throws {
    var body: [UInt8] = []
    StockReplyWriter.appendString(text, to: &body)
    let parsed = try JSONSerialization.jsonObject(with: Data(body), options: [.fragmentsAllowed]) as? String
    #expect(parsed == text)
  }

  @Test func theReplyParsesToTheSameValuesAndKeepsRequestOrder() throws {
    let cache = StockCache()
    let skus = (1...20).reversed().map { String(format: "p%05d", $0) }
    let now = Date(timeIntervalSince1970: 1_792_521_720)
    cache.fill(
      hub: "h1", rows: skus.enumerated().map { StockRow(sku: $1, count: $0 * 3, sequence: 1) }, readAt: now,
      generation: cache.generation)
    let lookup = cache.lookup(hub: "h1", skus: skus, now: now)
    let reply = StockReplyWriter.reply(skus: skus, lookup: lookup, now: now, timeToLive: 30)
    let object = try #require(try JSONSerialization.jsonObject(with: Data(reply.body)) as? [String: Any])
    #expect(object["asOf"] as? String == "2026-10-20T18:42:00Z")
    let stock = try #require(object["stock"] as? [String: Int])
    #expect(stock == Dictionary(uniqueKeysWithValues: skus.enumerated().map { ($1, $0 * 3) }))
    let text = String(decoding: reply.body, as: UTF8.self)
    #expect(text.hasPrefix(#"{"asOf":"2026-10-20T18:42:00Z","stock":{"p00020":0,"p00019":3,"#))
  }

  @Test func measureLookupsAndWritesPerSecond() {
    let cache = StockCache()
    let all = (1...3000).map { String(format: "p%05d", $0) }
    let now = Date(timeIntervalSince1970: 1_792_521_720)
    cache.fill(
      hub: "h1", rows: all.enumerated().map { StockRow(sku: $1, count: $0 % 80, sequence: 1) }, readAt: now,
      generation: cache.generation)
    let requests = (0..<64).map { start in (0..<20).map { all[(start * 37 + $0 * 101) % all.count] } }
    #if DEBUG
      let iterations = 20_000  // debug builds are ~20× slower; `swift test -c release` runs 200k
    #else
      let iterations = 200_000
    #endif
    var bytes = 0
    let started = ContinuousClock.now
    for index in 0..<iterations {
      let skus = requests[index & 63]
      let lookup = cache.lookup(hub: "h1", skus: skus, now: now)
      bytes &+= StockReplyWriter.reply(skus: skus, lookup: lookup, now: now, timeToLive: 30).body.count
    }
    let elapsed = ContinuousClock.now - started
    let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
    print(
      "StockCache lookup+write, 20 ids: \(Int(Double(iterations) / seconds)) per second (\(bytes / iterations) bytes each)"
    )
    #expect(bytes > 0)
  }
}

@Suite struct StockIDsTests {
  @Test(
    arguments: [
      ("p1", ["p1"], nil),
      ("p1,p2", ["p1", "p2"], nil),
      (" p1 , p2\t,p3 ", ["p1", "p2", "p3"], nil),
      ("p2,p1,p2,p1", ["p2", "p1"], nil),
      ("p00001,p00002,p10001,p00002,p00001", ["p00001", "p00002", "p10001"], nil),
      (nil, [], "missingIds"),
      ("", [], "missingIds"),
      ("   ", [], "missingIds"),
      (",", [], "invalidSKU"),
      ("p1,,p2", [], "invalidSKU"),
      ("p1,", [], "invalidSKU"),
      ("p1,p 2", [], "invalidSKU"),
      ("p1;p2", [], "invalidSKU"),
      ("p1,\(String(repeating: "x", count: 65))", [], "invalidSKU"),
    ] as [(String?, [String], String?)])
  func idsAreParsedStrictly(value: String?, expected: [String], code: String?) {
    var ids: [String] = []
    #expect(errorCode { () throws(DomainError) in ids = try StockIDs.parse(value) } == code)
    #expect(ids == expected)
  }

  @Test func atMostOneHundredIdsAreAllowedAndDuplicatesCollapseBeyondSixteen() throws {
    let hundred = (1...100).map { "p\($0)" }
    #expect(try StockIDs.parse(hundred.joined(separator: ",")) == hundred)
    #expect(throws: DomainError.tooManyIds(101)) {
      try StockIDs.parse((1...101).map { "p\($0)" }.joined(separator: ","))
    }
    let repeated = (1...40).map { "p\($0 % 20)" }.joined(separator: ",")
    #expect(try StockIDs.parse(repeated) == (1...20).map { "p\($0 % 20)" })
  }
}
