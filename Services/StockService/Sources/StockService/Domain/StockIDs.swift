/// Parsing of the `ids` query value of `GET /v1/hubs/{hub}/stock`.
public enum StockIDs {
  public static let maximumCount = 100

  /// `"p1, p2,p1"` → `["p1", "p2"]`: comma-separated (already percent-decoded), each item
  /// trimmed of spaces and tabs, 1–100 items, each a valid SKU, duplicates collapsed keeping
  /// the first. Nil, empty or blank → `missingIds`; more than 100 items (before collapsing) →
  /// `tooManyIds`; an empty item (`p1,,p2`) or a bad SKU → `invalidSKU`.
  public static func parse(_ value: String?) throws(DomainError) -> [SKU] {
    guard let value else { throw .missingIds }
    var ids: [SKU] = []
    var seen: Set<SKU>? = nil
    var itemCount = 0
    let bytes = value.utf8
    var itemStart = bytes.startIndex
    var index = bytes.startIndex
    while true {
      let atEnd = index == bytes.endIndex
      if atEnd || bytes[index] == UInt8(ascii: ",") {
        itemCount += 1
        guard itemCount <= maximumCount else { throw .tooManyIds(countItems(value)) }
        var lower = itemStart
        var upper = index
        while lower < upper, isBlank(bytes[lower]) { lower = bytes.index(after: lower) }
        while lower < upper, isBlank(bytes[bytes.index(before: upper)]) { upper = bytes.index(before: upper) }
        let item = Substring(value.utf8[lower..<upper])
        if atEnd && itemCount == 1 && item.isEmpty { throw .missingIds }
        let sku = String(item)
        guard Identifier.isValid(sku) else { throw .invalidSKU(sku) }
        if ids.count < 16 {
          if !ids.contains(sku) { ids.append(sku) }
        } else {
          if seen == nil { seen = Set(ids) }
          if seen!.insert(sku).inserted { ids.append(sku) }
        }
        if atEnd { break }
        itemStart = bytes.index(after: index)
      }
      index = bytes.index(after: index)
    }
    return ids
  }

  private static func isBlank(_ byte: UInt8) -> Bool {
    byte == UInt8(ascii: " ") || byte == UInt8(ascii: "\t")
  }

  private static func countItems(_ value: String) -> Int {
    value.utf8.reduce(1) { $0 + ($1 == UInt8(ascii: ",") ? 1 : 0) }
  }
}
