/// Replies a client or a CDN may keep: an `ETag` made from the body, and `304 Not Modified`
/// with no body when the request's `If-None-Match` names it.
extension HTTPResponse {
  /// A 200 JSON reply of `body` with `Cache-Control: cacheControl` and its `ETag`, or a 304
  /// when `request` already holds that version.
  public static func cacheable(_ body: [UInt8], cacheControl: String, for request: HTTPRequest)
    -> HTTPResponse
  {
    cacheable(body, tag: entityTag(of: body), cacheControl: cacheControl, for: request)
  }

  /// The same with the body's tag made before (a reply kept in memory keeps its tag).
  public static func cacheable(_ body: [UInt8], tag: String, cacheControl: String, for request: HTTPRequest)
    -> HTTPResponse
  {
    var headers = HTTPHeaders()
    headers.add("Cache-Control", cacheControl)
    headers.add("ETag", tag)
    if let presented = request.headers["If-None-Match"], matches(presented, tag) {
      return HTTPResponse(status: 304, headers: headers)
    }
    return .json(status: 200, bytes: body, headers: headers)
  }

  /// A strong entity tag: the body's 64-bit FNV-1a hash in hex, quoted. Made from the bytes, so
  /// every replica gives the same body the same tag.
  public static func entityTag(of body: [UInt8]) -> String {
    var hash: UInt64 = 0xcbf2_9ce4_8422_2325
    for byte in body {
      hash ^= UInt64(byte)
      hash &*= 0x100_0000_01b3
    }
    let hex = String(hash, radix: 16)
    return "\"" + String(repeating: "0", count: 16 - hex.count) + hex + "\""
  }

  /// Whether an `If-None-Match` value (`*`, or tags separated by commas, weak ones with `W/`)
  /// names `tag`: the weak comparison RFC 9110 asks of it.
  static func matches(_ presented: String, _ tag: String) -> Bool {
    for candidate in presented.split(separator: ",") {
      var value = candidate.drop(while: { $0 == " " || $0 == "\t" })
      while let last = value.last, last == " " || last == "\t" { value.removeLast() }
      if value == "*" { return true }
      if value.hasPrefix("W/") { value = value.dropFirst(2) }
      if value == tag { return true }
    }
    return false
  }
}
