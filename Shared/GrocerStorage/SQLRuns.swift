/// Splits `count` rows or values into runs for statements built per run size (multi-row
/// `INSERT`s, `IN (?, …)` lists). Run sizes come from a short fixed list, `largest` and the powers
/// of two below it, so each connection's cache of prepared statements keeps a few of each kind
/// instead of one per size ever seen (each a compiled program of several kilobytes).
public enum SQLRuns {
  public static func ranges(_ count: Int, largest: Int) -> [Range<Int>] {
    precondition(largest > 0, "a run holds at least one row")
    var ranges: [Range<Int>] = []
    var start = 0
    while count - start >= largest {
      ranges.append(start..<(start + largest))
      start += largest
    }
    var size = 1
    while size * 2 < largest { size *= 2 }
    while start < count {
      while size > count - start { size /= 2 }
      ranges.append(start..<(start + size))
      start += size
    }
    return ranges
  }
}
