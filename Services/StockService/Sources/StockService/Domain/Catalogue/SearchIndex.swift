import Foundation
import GrocerContracts

/// A hub's products made searchable in memory, built with its catalogue snapshot: the words of
/// each product's name, brand and category path, folded as `SearchQuery` folds what is typed.
///
/// A product matches when every term of the query starts one of its words. Matches rank by bm25
/// as FTS5 computes it (k1 1.2, b 0.75, a term's hits weighted 10 in the name, 4 in the brand and
/// 1 in the category path, over this hub's products), then by popularity, then by SKU.
struct SearchIndex: Sendable {
  /// The hits of one word in one product, weighted by field.
  private struct Posting: Sendable {
    var document: Int32
    var weight: Int32
  }

  static let nameWeight: Int32 = 10
  static let brandWeight: Int32 = 4
  static let categoryWeight: Int32 = 1
  private static let k1 = 1.2
  private static let b = 0.75

  /// Every distinct word as UTF-8, sorted bytewise so the words one prefix starts are one run.
  private let words: [[UInt8]]
  /// The products holding each word of `words`, in the same order.
  private let postings: [[Posting]]
  private let skus: [SKU]
  private let popularity: [Int]
  /// Each product's words in all three fields over their mean: bm25's length normalisation.
  private let relativeLengths: [Double]

  init(_ entries: some Collection<CatalogueEntry>, categoryPath: (CategoryID) -> [String]) {
    var skus: [SKU] = []
    var popularity: [Int] = []
    var lengths: [Int] = []
    skus.reserveCapacity(entries.count)
    var wordIDs: [String: Int] = [:]
    var postings: [[Posting]] = []
    // Brands and categories repeat across products: fold each once.
    var brandWords: [String: [String]] = [:]
    var categoryWords: [CategoryID: [String]] = [:]
    func folded<Key>(_ key: Key, _ known: inout [Key: [String]], _ fold: (Key) -> [String]) -> [String] {
      if let words = known[key] { return words }
      let words = fold(key)
      known[key] = words
      return words
    }
    var weights: [Int: Int32] = [:]
    for entry in entries {
      let product = entry.product
      let document = Int32(skus.count)
      skus.append(product.sku)
      popularity.append(entry.popularity)
      let brand = product.brand.map { folded($0, &brandWords, SearchQuery.terms(of:)) } ?? []
      let category =
        product.category.map {
          folded($0, &categoryWords) { categoryPath($0).flatMap(SearchQuery.terms(of:)) }
        }
        ?? []
      weights.removeAll(keepingCapacity: true)
      var length = 0
      for (fieldWords, weight) in [
        (SearchQuery.terms(of: product.name), Self.nameWeight), (brand, Self.brandWeight),
        (category, Self.categoryWeight),
      ] {
        length += fieldWords.count
        for word in fieldWords {
          let id: Int
          if let known = wordIDs[word] {
            id = known
          } else {
            id = postings.count
            wordIDs[word] = id
            postings.append([])
          }
          weights[id, default: 0] += weight
        }
      }
      lengths.append(length)
      for (id, weight) in weights { postings[id].append(Posting(document: document, weight: weight)) }
    }
    let order = wordIDs.map { (bytes: Array($0.key.utf8), id: $0.value) }.sorted {
      $0.bytes.lexicographicallyPrecedes($1.bytes)
    }
    words = order.map(\.bytes)
    self.postings = order.map { postings[$0.id] }
    self.skus = skus
    self.popularity = popularity
    let average = lengths.isEmpty ? 1 : max(1, Double(lengths.reduce(0, +)) / Double(lengths.count))
    relativeLengths = lengths.map { Double($0) / average }
  }

  /// The SKUs matching `query`, best first, `limit` of them after the first `offset`.
  func search(_ query: SearchQuery, offset: Int, limit: Int) -> [SKU] {
    let count = skus.count
    guard count > 0, limit > 0 else { return [] }
    // Per product: how many terms it matched so far, and its score.
    var matched = [Int](repeating: 0, count: count)
    var scores = [Double](repeating: 0, count: count)
    // One term's weighted hits per product, and the products it touched.
    var frequency = [Int32](repeating: 0, count: count)
    var touched: [Int32] = []
    for (index, term) in query.terms.enumerated() {
      touched.removeAll(keepingCapacity: true)
      let prefix = Array(term.utf8)
      var word = firstWord(notBefore: prefix)
      while word < words.count, words[word].starts(with: prefix) {
        for posting in postings[word] {
          let document = Int(posting.document)
          if frequency[document] == 0 { touched.append(posting.document) }
          frequency[document] += posting.weight
        }
        word += 1
      }
      // FTS5 counts every product a term matches, and keeps a common term's weight just above 0.
      let hits = Double(touched.count)
      let idf = max(log((Double(count) - hits + 0.5) / (hits + 0.5)), 1e-6)
      for document in touched.lazy.map(Int.init) {
        let hits = Double(frequency[document])
        frequency[document] = 0
        guard matched[document] == index else { continue }
        matched[document] = index + 1
        scores[document] +=
          idf * hits * (Self.k1 + 1)
          / (hits + Self.k1 * (1 - Self.b + Self.b * relativeLengths[document]))
      }
    }
    // Every match was touched by the last term.
    let matches = touched.lazy.map(Int.init).filter { matched[$0] == query.terms.count }.sorted {
      if scores[$0] != scores[$1] { return scores[$0] > scores[$1] }
      if popularity[$0] != popularity[$1] { return popularity[$0] > popularity[$1] }
      return skus[$0] < skus[$1]
    }
    guard offset < matches.count else { return [] }
    return matches[offset..<min(matches.count, offset + limit)].map { skus[$0] }
  }

  /// The index of the first word not ordered before `prefix`.
  private func firstWord(notBefore prefix: [UInt8]) -> Int {
    var low = 0
    var high = words.count
    while low < high {
      let middle = (low + high) / 2
      if words[middle].lexicographicallyPrecedes(prefix) { low = middle + 1 } else { high = middle }
    }
    return low
  }
}
