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

  /// Runs for statements where a row given twice means what it means once (`IN (?, …)` lists, an
  /// `UPDATE … FROM (VALUES …)` of identical rows): runs of `largest`, then the rest as one run
  /// filled up to a size from the same short list by repeating its last index. So any count up to
  /// `largest` is one statement, not one per set bit of the count.
  public static func padded(_ count: Int, largest: Int) -> [[Int]] {
    precondition(largest > 0, "a run holds at least one row")
    var runs: [[Int]] = []
    var start = 0
    while count - start >= largest {
      runs.append(Array(start..<(start + largest)))
      start += largest
    }
    guard start < count else { return runs }
    var size = 1
    while size < count - start { size *= 2 }
    let run = Array(start..<count)
    runs.append(run + Array(repeating: count - 1, count: min(size, largest) - run.count))
    return runs
  }
}
