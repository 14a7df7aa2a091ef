/// The HTTP protocol version a response actually came over.
public enum HTTPClientVersion: Sendable, Equatable, CustomStringConvertible {
  case http1_0
  case http1_1
  case http2
  case http3
  /// libcurl did not say (no response was received).
  case unknown

  public var description: String {
    switch self {
    case .http1_0: "HTTP/1.0"
    case .http1_1: "HTTP/1.1"
    case .http2: "HTTP/2"
    case .http3: "HTTP/3"
    case .unknown: "unknown"
    }
  }
}

/// One complete response: status, header fields (names lower-cased, in order) and the body.
public struct HTTPClientResponse: Sendable {
  public var status: Int
  /// Header fields in the order received, names lower-cased (HTTP/2 sends them so anyway).
  public var headers: [(name: String, value: String)]
  public var body: [UInt8]
  /// The version this response came over; `.http2` proves the request was multiplexed-capable.
  public var version: HTTPClientVersion

  public init(
    status: Int, headers: [(name: String, value: String)], body: [UInt8], version: HTTPClientVersion
  ) {
    self.status = status
    self.headers = headers
    self.body = body
    self.version = version
  }

  /// The first value of header `name` (any case), or nil.
  public func header(_ name: String) -> String? {
    let lowered = name.lowercased()
    return headers.first { $0.name == lowered }?.value
  }

  /// Every value of header `name` (any case), in order.
  public func headerValues(_ name: String) -> [String] {
    let lowered = name.lowercased()
    return headers.filter { $0.name == lowered }.map(\.value)
  }

  /// The body read as UTF-8.
  public var bodyString: String { String(decoding: body, as: UTF8.self) }
}
