/// Our statements use `?` for each bound value (SQLite's way); PostgreSQL numbers them `$1`, `$2`, ….
/// This rewrites one into the other, leaving `?` inside string literals, quoted identifiers and
/// comments alone, so one SQL text serves both engines.
enum Placeholders {
  /// The statement with its `?`s numbered, and how many there were.
  static func numbered(_ sql: String) -> (sql: String, count: Int) {
    var output = ""
    output.reserveCapacity(sql.utf8.count + 8)
    var count = 0
    var scalars = sql.unicodeScalars.makeIterator()
    var pending: Unicode.Scalar? = nil
    func next() -> Unicode.Scalar? {
      if let scalar = pending {
        pending = nil
        return scalar
      }
      return scalars.next()
    }
    while let scalar = next() {
      switch scalar {
      case "?":
        count += 1
        output += "$\(count)"
      case "'", "\"":
        // A literal or an identifier runs to the matching quote (a doubled quote stays inside).
        output.unicodeScalars.append(scalar)
        while let inner = next() {
          output.unicodeScalars.append(inner)
          if inner == scalar { break }
        }
      case "-":
        output.unicodeScalars.append(scalar)
        guard let following = next() else { break }
        guard following == "-" else {
          pending = following
          break
        }
        output.unicodeScalars.append(following)
        while let inner = next() {
          output.unicodeScalars.append(inner)
          if inner == "\n" { break }
        }
      case "/":
        output.unicodeScalars.append(scalar)
        guard let following = next() else { break }
        guard following == "*" else {
          pending = following
          break
        }
        output.unicodeScalars.append(following)
        var previous: Unicode.Scalar = " "
        while let inner = next() {
          output.unicodeScalars.append(inner)
          if previous == "*" && inner == "/" { break }
          previous = inner
        }
      default:
        output.unicodeScalars.append(scalar)
      }
    }
    return (output, count)
  }
}
