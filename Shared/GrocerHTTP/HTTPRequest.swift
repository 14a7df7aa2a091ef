import GrocerCore
import GrocerFastPath

/// One HTTP request as the router, middleware and controllers see it.
///
/// Built once per request by the adapter (or `TestClient`) from the raw request target, so both
/// parse the target the same way. Fields after `body` are filled in as the request passes through
/// the router and middleware.
public struct HTTPRequest: Sendable {
  /// Upper-case method (`GET`, `PUT`, …).
  public var method: String
  /// The percent-decoded path, without the query (decoded when asked: the router works on
  /// `rawPath`, and the hot path never needs this).
  public var path: String { PercentDecoding.decode(rawPath, plusIsSpace: false) }
  /// The path exactly as received (still percent-encoded); the router splits this one, so an
  /// encoded `/` inside a parameter stays inside it.
  public var rawPath: String
  /// Query parameters, percent-decoded, `+` read as a space; the last value of a repeated name
  /// wins. Parsed when asked (a remembered reply is found by `rawQuery` alone).
  public var query: [String: String] { PercentDecoding.parseQuery(rawQuery) }
  /// The query string as received, without the `?`.
  public var rawQuery: String
  public var headers: HTTPHeaders
  public var body: [UInt8]
  /// Template parameters (`{hub}` → `h1`), percent-decoded; filled by the router.
  public var pathParameters = PathParameters()
  /// Filled by `RequestIDMiddleware`.
  public var requestID: String = ""
  /// Filled by `AuthMiddleware` when a valid bearer token was presented.
  public var principal: Principal? = nil
  /// The matched route template (`/v1/hubs/{hub}/stock`), nil when no route matched.
  public var route: String? = nil
  /// The matched route's place in its router (-1 when none matched), for finding per-route
  /// state without hashing the template.
  var routeIndex = -1
  /// What the matched route demands of the caller; set by the router, read by `AuthMiddleware`.
  public var authRequirement: AuthRequirement = .none
  /// When the adapter finished reading the request; for latency metrics and logs.
  public var startedAt: MonotonicInstant

  /// Parses `target` (`/path?query`) into path and query.
  public init(
    method: String, target: String, headers: HTTPHeaders = HTTPHeaders(), body: [UInt8] = [],
    startedAt: MonotonicInstant = .now
  ) {
    self.method = method
    let (rawPath, rawQuery) = Self.split(target: target)
    self.rawPath = rawPath
    self.rawQuery = rawQuery
    self.headers = headers
    self.body = body
    self.startedAt = startedAt
  }

  /// From a target already split into path and query (the transport's).
  package init(
    method: String, rawPath: String, rawQuery: String, headers: HTTPHeaders, body: [UInt8],
    startedAt: MonotonicInstant = .now
  ) {
    self.method = method
    self.rawPath = rawPath
    self.rawQuery = rawQuery
    self.headers = headers
    self.body = body
    self.startedAt = startedAt
  }

  /// The value of template parameter `name`; throws 400 if the route did not bind it.
  public func pathParameter(_ name: String) throws(HTTPError) -> String {
    guard let value = pathParameters[name] else {
      throw HTTPError.badRequest(code: "missingParameter", detail: "missing path parameter \(name)")
    }
    return value
  }

  /// The value of query parameter `name`, or nil (as `query[name]`, without building the whole
  /// dictionary: the stock lookup reads its `ids` on every request).
  public func queryParameter(_ name: String) -> String? { PercentDecoding.parameter(name, in: rawQuery) }

  private static func split(target: String) -> (String, String) {
    let utf8 = target.utf8
    guard let mark = utf8.firstIndex(of: UInt8(ascii: "?")) else {
      return (target.isEmpty ? "/" : target, "")
    }
    let path = String(target[..<mark])
    let query = String(target[target.utf8.index(after: mark)...])
    return (path.isEmpty ? "/" : path, query)
  }
}

/// Percent-decoding over UTF-8 bytes, without Foundation (this runs for every request).
enum PercentDecoding {
  /// Decodes `%XX` escapes (and `+` as space if asked). Invalid escapes are kept as they are;
  /// invalid UTF-8 becomes U+FFFD.
  static func decode<S: StringProtocol>(_ text: S, plusIsSpace: Bool) -> String {
    let utf8 = text.utf8
    var needsWork = false
    for byte in utf8 where byte == UInt8(ascii: "%") || (plusIsSpace && byte == UInt8(ascii: "+")) {
      needsWork = true
      break
    }
    if !needsWork { return String(text) }
    var out: [UInt8] = []
    out.reserveCapacity(utf8.count)
    var index = utf8.startIndex
    while index != utf8.endIndex {
      let byte = utf8[index]
      if byte == UInt8(ascii: "%") {
        let first = utf8.index(after: index)
        if first != utf8.endIndex {
          let second = utf8.index(after: first)
          if second != utf8.endIndex, let high = hex(utf8[first]), let low = hex(utf8[second]) {
            out.append(high << 4 | low)
            index = utf8.index(after: second)
            continue
          }
        }
        out.append(byte)
      } else if plusIsSpace && byte == UInt8(ascii: "+") {
        out.append(UInt8(ascii: " "))
      } else {
        out.append(byte)
      }
      index = utf8.index(after: index)
    }
    return String(decoding: out, as: UTF8.self)
  }

  /// The value `parseQuery(raw)[name]` would give: the last one named `name`, decoded. Walks the
  /// bytes once and makes no string but the value's.
  static func parameter(_ name: String, in raw: String) -> String? {
    var raw = raw
    raw.makeContiguousUTF8()
    // Contiguous after `makeContiguousUTF8`, so the closure always runs.
    return raw.utf8.withContiguousStorageIfAvailable { bytes -> String? in
      var found: Range<Int>?
      var foundEncoded = false
      var start = 0
      while start <= bytes.count {
        var end = start
        var equals: Int?
        var encoded = false
        var valueEncoded = false
        while end < bytes.count, bytes[end] != UInt8(ascii: "&") {
          let byte = bytes[end]
          if byte == UInt8(ascii: "="), equals == nil {
            equals = end
          } else if byte == UInt8(ascii: "%") || byte == UInt8(ascii: "+") {
            if equals == nil { encoded = true } else { valueEncoded = true }
          }
          end += 1
        }
        if end > start {
          let nameEnd = equals ?? end
          let rawName = UnsafeBufferPointer(rebasing: bytes[start..<nameEnd])
          let matches =
            encoded
            ? decode(Substring(decoding: rawName, as: UTF8.self), plusIsSpace: true) == name
            : rawName.elementsEqual(name.utf8)
          if matches {
            found = equals.map { ($0 + 1)..<end } ?? end..<end
            foundEncoded = valueEncoded
          }
        }
        start = end + 1
      }
      guard let found else { return nil }
      let value = UnsafeBufferPointer(rebasing: bytes[found])
      // Most values have nothing to decode: one String from the bytes, no second scan.
      guard foundEncoded else { return String(decoding: value, as: UTF8.self) }
      return decode(Substring(decoding: value, as: UTF8.self), plusIsSpace: true)
    } ?? nil
  }

  /// `a=1&b=x+y&a=2` → `["a": "2", "b": "x y"]`. A name without `=` maps to the empty string.
  static func parseQuery(_ raw: String) -> [String: String] {
    guard !raw.isEmpty else { return [:] }
    var result: [String: String] = [:]
    for part in raw.utf8.split(separator: UInt8(ascii: "&"), omittingEmptySubsequences: true) {
      let pair = Substring(part)
      if let equals = pair.utf8.firstIndex(of: UInt8(ascii: "=")) {
        let name = decode(pair[..<equals], plusIsSpace: true)
        result[name] = decode(pair[pair.utf8.index(after: equals)...], plusIsSpace: true)
      } else {
        result[decode(pair, plusIsSpace: true)] = ""
      }
    }
    return result
  }

  private static func hex(_ byte: UInt8) -> UInt8? {
    switch byte {
    case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
    case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
    case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
    default: nil
    }
  }
}
