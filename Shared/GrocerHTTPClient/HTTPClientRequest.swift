/// One request for `HTTP2Client`: a method, a path below the client's base URL, header fields in
/// order and the whole body in memory.
public struct HTTPClientRequest: Sendable {
  /// `GET`, `POST`, `PUT`, `DELETE`, `HEAD`, … (sent as given).
  public var method: String
  /// The path and query below the base URL (`/3/device/<token>`); a missing leading `/` is added.
  public var path: String
  /// Header fields in order; repeated names are sent repeatedly. An empty value is sent empty.
  public var headers: [(String, String)]
  public var body: [UInt8]

  public init(method: String, path: String, headers: [(String, String)] = [], body: [UInt8] = []) {
    self.method = method
    self.path = path
    self.headers = headers
    self.body = body
  }
}
