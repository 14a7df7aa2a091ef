import Foundation
import GrocerCore

/// The one error type controllers throw; it becomes an `application/problem+json` response
/// (RFC 9457) with `type`, `title`, `status`, `detail` and our stable machine `code`.
///
/// Anything else a handler throws becomes a 500 that says nothing about the cause (see `Router`).
public struct HTTPError: Error, Sendable, Equatable {
  public var status: Int
  /// Stable, machine-readable (`unknownProduct`, `malformedJSON`); also names the problem type.
  public var code: String
  public var title: String
  public var detail: String
  /// Extra problem members (`missing`, `available`, …), merged into the body.
  public var extra: [String: JSONValue]
  /// Extra response headers (`Allow`, `Retry-After`, `WWW-Authenticate`).
  public var headers: HTTPHeaders

  public init(
    status: Int, code: String, title: String? = nil, detail: String,
    extra: [String: JSONValue] = [:], headers: HTTPHeaders = HTTPHeaders()
  ) {
    self.status = status
    self.code = code
    self.title = title ?? Self.reason(for: status)
    self.detail = detail
    self.extra = extra
    self.headers = headers
  }

  /// `https://grocer.example/problems/<code>`.
  public var type: String { "https://grocer.example/problems/\(code)" }

  /// The problem+json response for this error.
  public var response: HTTPResponse {
    var members = extra
    members["type"] = .string(type)
    members["title"] = .string(title)
    members["status"] = .number(Double(status))
    members["detail"] = .string(detail)
    members["code"] = .string(code)
    let body = (try? JSON.encoder().encode(members)).map { [UInt8]($0) } ?? Array("{}".utf8)
    var all = headers
    all.add("Content-Type", "application/problem+json")
    return HTTPResponse(status: status, headers: all, body: body)
  }

  // MARK: Common cases

  public static func badRequest(code: String, detail: String) -> HTTPError {
    HTTPError(status: 400, code: code, detail: detail)
  }

  /// 401 with `WWW-Authenticate: Bearer`.
  public static func unauthorized(detail: String = "a valid bearer token is required") -> HTTPError {
    HTTPError(status: 401, code: "unauthorized", detail: detail, headers: ["WWW-Authenticate": "Bearer"])
  }

  public static func forbidden(code: String = "forbidden", detail: String) -> HTTPError {
    HTTPError(status: 403, code: code, detail: detail)
  }

  public static func notFound(code: String = "notFound", detail: String) -> HTTPError {
    HTTPError(status: 404, code: code, detail: detail)
  }

  /// 405 with `Allow` listing the methods the path accepts.
  public static func methodNotAllowed(allow: [String]) -> HTTPError {
    HTTPError(
      status: 405, code: "methodNotAllowed",
      detail: "this resource allows \(allow.joined(separator: ", "))",
      headers: ["Allow": allow.joined(separator: ", ")])
  }

  public static func conflict(code: String, detail: String) -> HTTPError {
    HTTPError(status: 409, code: code, detail: detail)
  }

  public static func payloadTooLarge(limit: Int) -> HTTPError {
    HTTPError(
      status: 413, code: "payloadTooLarge", detail: "the request body exceeds \(limit) bytes")
  }

  public static func unsupportedMediaType(detail: String = "the request body must be application/json")
    -> HTTPError
  {
    HTTPError(status: 415, code: "unsupportedMediaType", detail: detail)
  }

  public static func unprocessable(code: String, detail: String, extra: [String: JSONValue] = [:])
    -> HTTPError
  {
    HTTPError(status: 422, code: code, detail: detail, extra: extra)
  }

  /// 429 with `Retry-After` in seconds.
  public static func tooManyRequests(retryAfter: Int, detail: String = "too many requests") -> HTTPError {
    HTTPError(
      status: 429, code: "tooManyRequests", detail: detail, headers: ["Retry-After": String(retryAfter)])
  }

  /// 503 with `Retry-After` in seconds.
  public static func serviceUnavailable(
    retryAfter: Int, detail: String = "a dependency is unavailable", extra: [String: JSONValue] = [:]
  ) -> HTTPError {
    HTTPError(
      status: 503, code: "serviceUnavailable", detail: detail, extra: extra,
      headers: ["Retry-After": String(retryAfter)])
  }

  /// The 500 for anything that is not an `HTTPError`: no detail about the cause.
  public static let internalServerError = HTTPError(
    status: 500, code: "internalError", detail: "the server failed to answer this request")

  static func reason(for status: Int) -> String {
    switch status {
    case 400: "Bad Request"
    case 401: "Unauthorized"
    case 403: "Forbidden"
    case 404: "Not Found"
    case 405: "Method Not Allowed"
    case 409: "Conflict"
    case 413: "Content Too Large"
    case 415: "Unsupported Media Type"
    case 422: "Unprocessable Content"
    case 429: "Too Many Requests"
    case 500: "Internal Server Error"
    case 503: "Service Unavailable"
    default: "HTTP \(status)"
    }
  }
}

/// Runs a handler's storage work: an `HTTPError` passes as it is, anything else (the database
/// busy, an I/O error) becomes a 503 with `Retry-After: 1` naming `database`, never a 500.
public func answeringStorageTroubleAs503<T: Sendable>(
  database: String, _ body: () async throws -> T
) async throws -> T {
  do { return try await body() } catch { throw HTTPError.answering(error, database: database) }
}

extension HTTPError {
  /// 503 with `Retry-After: 1` for storage work that failed (the database busy, an I/O error).
  public static func storageTrouble(database: String) -> HTTPError {
    .serviceUnavailable(retryAfter: 1, detail: "the \(database) database is busy; ask again")
  }

  /// What storage work's `error` answers (`answeringStorageTroubleAs503`, or a completion): an
  /// `HTTPError` as it is, anything else `storageTrouble(database:)`.
  public static func answering(_ error: any Error, database: String) -> HTTPError {
    error as? HTTPError ?? storageTrouble(database: database)
  }
}
