import Foundation
import GrocerCore
import StockService
import Testing

/// The stock reply is written by hand (the lookup is benchmarked against nginx): it holds what
/// Codable would write for `{ asOf, stock }`, with the counts in request order, where Codable
/// sorts them.
@Suite struct StockReplyCodableTests {
  struct Reply: Codable, Equatable {
    var asOf: Date
    var stock: [String: Int]
  }

  static let readAt = Date(timeIntervalSince1970: 1_792_584_000)
  static let now = readAt.addingTimeInterval(3)

  /// The oldest read among the SKUs consulted; with none, now.
  static func asOf(_ counts: [(String, Int?)]) -> Date { counts.isEmpty ? now : readAt }

  static func reply(_ counts: [(String, Int?)]) -> [UInt8] {
    let cache = StockCache(timeToLive: 30)
    let skus = counts.map(\.0)
    let rows = counts.enumerated().map { StockRow(sku: $1.0, count: $1.1, sequence: Int64($0 + 1)) }
    cache.fill(hub: "h1", rows: rows, readAt: readAt, generation: cache.generation)
    let lookup = cache.lookup(hub: "h1", skus: skus, now: now)
    return StockReplyWriter.reply(
      skus: skus, lookup: lookup, now: now, timeToLive: 30
    )
    .body
  }

  static let samples: [[(String, Int?)]] = [
    [],
    [("p00001", 12), ("p00002", 0)],
    [("p2", 7), ("p1", nil), ("p10", 1_000_000)],
    [("quote\"d", 1), ("back\\slash", 2), ("straße", 3), ("tab\t", 4), ("\u{1}", 5)],
  ]

  @Test(arguments: samples.indices) func theReplyReadsAsCodableReadsIt(index: Int) throws {
    let counts = Self.samples[index]
    let body = Self.reply(counts)
    let decoded = try JSON.decode(Reply.self, from: Data(body))
    let known = counts.compactMap { sku, count in count.map { (sku, $0) } }
    #expect(decoded == Reply(asOf: Self.asOf(counts), stock: Dictionary(uniqueKeysWithValues: known)))
  }

  /// (SKUs as lookups take them: identifiers, nothing to escape.)
  @Test(arguments: 0..<3) func inSortedOrderItIsCodablesBytes(index: Int) throws {
    let counts = Self.samples[index].sorted { $0.0 < $1.0 }
    let body = Self.reply(counts)
    let known = counts.compactMap { sku, count in count.map { (sku, $0) } }
    let encoded = try JSON.encode(
      Reply(asOf: Self.asOf(counts), stock: Dictionary(uniqueKeysWithValues: known)))
    #expect(String(decoding: body, as: UTF8.self) == String(decoding: encoded, as: UTF8.self))
  }
}
