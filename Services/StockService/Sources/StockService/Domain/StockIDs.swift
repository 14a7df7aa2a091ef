import GrocerContracts

/// Parsing of the `ids` query value of `GET /v1/hubs/{hub}/stock`.
public enum StockIDs {
  public static let maximumCount = 100

  /// `"p1, p2,p1"` → `["p1", "p2"]`: comma-separated (already percent-decoded), each item
  /// trimmed of spaces and tabs, 1–100 items, each a valid SKU, duplicates collapsed keeping
  /// the first. Nil, empty or blank → `missingIds`; more than 100 items (before collapsing) →
  /// `tooManyIds`; an empty item (`p1,,p2`) or a bad SKU → `invalidSKU`.
  public static func parse(_ value: String?) throws(DomainError) -> [SKU] {
    guard var value else { throw .missingIds }
    // The hot path: work on the contiguous UTF-8 bytes with integer offsets, make one String
    // per id and no Substrings.
    value.makeContiguousUTF8()
    let result: Result<[SKU], DomainError> = value.utf8.withContiguousStorageIfAvailable { bytes in
      parse(bytes, original: value)
    }!
    return try result.get()
  }

  private static func parse(_ bytes: UnsafeBufferPointer<UInt8>, original: String) -> Result<
    [SKU], DomainError
  > {
    var ids: [SKU] = []
    ids.reserveCapacity(min(maximumCount, 24))
    // Byte ranges of the ids kept so far, each with a cheap hash of its bytes: a duplicate is
    // found by comparing hashes, and bytes only where they match (a hub's SKUs share their
    // first bytes, so comparing bytes alone walks every prefix).
    var kept: [(hash: UInt64, range: Range<Int>)] = []
    kept.reserveCapacity(min(maximumCount, 24))
    var itemCount = 0
    var itemStart = 0
    var index = 0
    let end = bytes.count
    while true {
      let atEnd = index == end
      if atEnd || bytes[index] == UInt8(ascii: ",") {
        itemCount += 1
        guard itemCount <= maximumCount else { return .failure(.tooManyIds(countItems(original))) }
        var lower = itemStart
        var upper = index
        while lower < upper, isBlank(bytes[lower]) { lower += 1 }
        while lower < upper, isBlank(bytes[upper - 1]) { upper -= 1 }
        if atEnd && itemCount == 1 && lower == upper { return .failure(.missingIds) }
        let range = lower..<upper
        guard !range.isEmpty, range.count <= Identifier.maximumLength, let hash = allowedHash(bytes, range)
        else {
          return .failure(
            .invalidSKU(String(decoding: UnsafeBufferPointer(rebasing: bytes[range]), as: UTF8.self)))
        }
        if !kept.contains(where: { $0.hash == hash && equalBytes(bytes, $0.range, range) }) {
          kept.append((hash, range))
          ids.append(String(decoding: UnsafeBufferPointer(rebasing: bytes[range]), as: UTF8.self))
        }
        if atEnd { break }
        itemStart = index + 1
      }
      index += 1
    }
    return .success(ids)
  }

  private static func equalBytes(_ bytes: UnsafeBufferPointer<UInt8>, _ a: Range<Int>, _ b: Range<Int>)
    -> Bool
  {
    guard a.count == b.count else { return false }
    var i = a.lowerBound
    var j = b.lowerBound
    while i < a.upperBound {
      if bytes[i] != bytes[j] { return false }
      i += 1
      j += 1
    }
    return true
  }

  /// FNV-1a over the bytes of `range`, in the same pass that checks each is allowed in an
  /// identifier; nil if one is not.
  private static func allowedHash(_ bytes: UnsafeBufferPointer<UInt8>, _ range: Range<Int>) -> UInt64? {
    var hash: UInt64 = 0xcbf2_9ce4_8422_2325
    for index in range {
      guard Identifier.isAllowed(bytes[index]) else { return nil }
      hash = (hash ^ UInt64(bytes[index])) &* 0x100_0000_01b3
    }
    return hash
  }

  private static func isBlank(_ byte: UInt8) -> Bool {
    byte == UInt8(ascii: " ") || byte == UInt8(ascii: "\t")
  }

  private static func countItems(_ value: String) -> Int {
    value.utf8.reduce(1) { $0 + ($1 == UInt8(ascii: ",") ? 1 : 0) }
  }
}
