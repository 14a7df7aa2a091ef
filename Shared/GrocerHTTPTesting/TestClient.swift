import Foundation
import GrocerCore
import GrocerHTTP

/// Drives any `HTTPResponder` in-process, without sockets, the way the adapter does: the body
/// limit first (same `BodyLimit` check, same 413), then `respondImmediately`, else `respond`.
///
/// For every service's tests: `let response = await client.get("/v1/hubs/h1/stock?ids=a,b")`.
public struct TestClient: Sendable {
  public let responder: any HTTPResponder
  public let maxBodyBytes: Int
  /// Headers sent with every request (a default `Authorization`, say); per-call headers win.
  public var defaultHeaders: [String: String]

  public init(
    _ responder: any HTTPResponder, maxBodyBytes: Int = BodyLimit.defaultBytes,
    defaultHeaders: [String: String] = [:]
  ) {
    self.responder = responder
    self.maxBodyBytes = maxBodyBytes
    self.defaultHeaders = defaultHeaders
  }

  /// Sends one request; `target` may carry a query (`/path?a=1`).
  public func send(
    _ method: String, _ target: String, headers: [String: String] = [:], body: [UInt8]? = nil
  ) async -> HTTPResponse {
    var fields = HTTPHeaders()
    for (name, value) in defaultHeaders.merging(headers, uniquingKeysWith: { _, new in new })
      .sorted(by: { $0.key < $1.key })
    {
      fields.add(name, value)
    }
    if let body, fields["Content-Length"] == nil { fields.add("Content-Length", String(body.count)) }
    if let tooLarge = BodyLimit.check(
      declaredLength: fields["Content-Length"], received: body?.count ?? 0, limit: maxBodyBytes)
    {
      return tooLarge
    }
    // As the server does: the same request, possibly resolved by the immediate attempt, goes on.
    var request = HTTPRequest(method: method.uppercased(), target: target, headers: fields, body: body ?? [])
    if let immediate = responder.respondImmediately(to: &request) { return immediate }
    return await responder.respond(to: request)
  }

  public func send(
    _ method: String, _ target: String, headers: [String: String] = [:], body: String
  ) async -> HTTPResponse {
    await send(method, target, headers: headers, body: Array(body.utf8))
  }

  public func get(_ target: String, headers: [String: String] = [:]) async -> HTTPResponse {
    await send("GET", target, headers: headers)
  }

  public func delete(_ target: String, headers: [String: String] = [:]) async -> HTTPResponse {
    await send("DELETE", target, headers: headers)
  }

  /// POSTs `json` encoded with `GrocerCore.JSON.encoder()` as `application/json`.
  public func post(_ target: String, json: some Encodable, headers: [String: String] = [:]) async throws
    -> HTTPResponse
  {
    await send("POST", target, headers: jsonHeaders(headers), body: [UInt8](try JSON.encode(json)))
  }

  /// PUTs `json` encoded with `GrocerCore.JSON.encoder()` as `application/json`.
  public func put(_ target: String, json: some Encodable, headers: [String: String] = [:]) async throws
    -> HTTPResponse
  {
    await send("PUT", target, headers: jsonHeaders(headers), body: [UInt8](try JSON.encode(json)))
  }

  private func jsonHeaders(_ headers: [String: String]) -> [String: String] {
    var all = headers
    if all.keys.contains(where: { $0.lowercased() == "content-type" }) == false {
      all["Content-Type"] = "application/json"
    }
    return all
  }
}
