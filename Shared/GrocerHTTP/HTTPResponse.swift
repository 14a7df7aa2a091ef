import Foundation
import GrocerCore

/// One HTTP response: status, headers and the whole body in memory, or a body written while it
/// is sent (`stream`, for server-sent events).
public struct HTTPResponse: Sendable, Equatable {
  public var status: Int
  public var headers: HTTPHeaders
  public var body: [UInt8]
  /// When set, the body is this stream's (and `body` is ignored), sent with chunked coding.
  public var stream: HTTPBodyStream?

  public init(status: Int, headers: HTTPHeaders = HTTPHeaders(), body: [UInt8] = []) {
    self.status = status
    self.headers = headers
    self.body = body
  }

  /// JSON that is already encoded (the hot path: a cached body, or bytes built by hand).
  public static func json(status: Int = 200, bytes: [UInt8], headers: HTTPHeaders = HTTPHeaders())
    -> HTTPResponse
  {
    var all = headers
    // Room for the few the middleware adds (request id), so they need no second allocation.
    all.reserveCapacity(all.count + 4)
    all.add("Content-Type", "application/json")
    return HTTPResponse(status: status, headers: all, body: bytes)
  }

  /// Encodes `value` with `GrocerCore.JSON.encoder()` (sorted keys, RFC 3339 dates).
  public static func json(
    status: Int = 200, value: some Encodable, headers: HTTPHeaders = HTTPHeaders()
  ) throws -> HTTPResponse {
    let data = try JSON.encoder().encode(value)
    return json(status: status, bytes: [UInt8](data), headers: headers)
  }

  /// Plain UTF-8 text (`text/plain; charset=utf-8` unless `contentType` says otherwise).
  public static func text(
    _ text: String, status: Int = 200, contentType: String = "text/plain; charset=utf-8"
  ) -> HTTPResponse {
    HTTPResponse(status: status, headers: ["Content-Type": contentType], body: Array(text.utf8))
  }

  /// `text/event-stream` from `stream`: not cached, and not buffered by a proxy in front
  /// (`X-Accel-Buffering: no` is nginx's switch for one response).
  public static func eventStream(_ stream: HTTPBodyStream, headers: HTTPHeaders = HTTPHeaders())
    -> HTTPResponse
  {
    var all = headers
    all.add("Content-Type", "text/event-stream")
    all.add("Cache-Control", "no-store")
    all.add("X-Accel-Buffering", "no")
    var response = HTTPResponse(status: 200, headers: all)
    response.stream = stream
    return response
  }

  /// 204 with no body.
  public static func noContent(headers: HTTPHeaders = HTTPHeaders()) -> HTTPResponse {
    HTTPResponse(status: 204, headers: headers)
  }

  /// The body read as UTF-8.
  public var bodyString: String { String(decoding: body, as: UTF8.self) }

  /// Decodes the body as JSON with `GrocerCore.JSON.decoder()` (for tests and clients).
  public func json<T: Decodable>(as type: T.Type) throws -> T {
    try JSON.decoder().decode(type, from: Data(body))
  }
}
