import Foundation
import GrocerAuth
import GrocerCore
import GrocerHTTP

/// The APNs simulator served over HTTP, speaking APNs's provider API: `POST /3/device/{token}`
/// with the `apns-*` headers and `authorization: bearer <JWT>`, answered as APNs answers — 200
/// with an empty body, or the status with `{"reason":"…"}` (and, for 410, `"timestamp"` in
/// milliseconds); the `apns-id` header on every answer.
///
/// In order: the provider token (`APNsProviderTokenVerifier`: 403 `MissingProviderToken`,
/// `InvalidProviderToken`, `ExpiredProviderToken`, 429 `TooManyProviderTokenUpdates`), then the
/// headers as APNs reads them (defaults: a generated `apns-id`, priority 10, no expiration; 400
/// `InvalidPushType`, `MissingTopic`, `BadPriority`, `BadExpirationDate`), then the simulator
/// (`APNsSimulator.send`: the rules, 410, 429, injected 503s; it records the push).
///
/// libmicrohttpd speaks HTTP/1.1 only: to test the HTTP/2 transport, put nginx in front
/// (`deploy/local/apns-simulator.sh`, or `NginxH2Front` in tests) to terminate TLS and h2, as
/// APNs's own front does.
public struct APNsSimulatorRoutes: Sendable {
  public let simulator: APNsSimulator
  public let verifier: APNsProviderTokenVerifier

  public init(simulator: APNsSimulator, verifier: APNsProviderTokenVerifier) {
    self.simulator = simulator
    self.verifier = verifier
  }

  /// `POST /3/device/{token}` (no GrocerHTTP auth: the provider token is checked here), its other
  /// methods (405 `MethodNotAllowed`) and its empty token (400 `MissingDeviceToken`) as APNs
  /// answers them; `GET /v1/sim/devices/{token}` (what the simulator recorded for a token) and
  /// `POST /v1/sim/devices/{token}/unregister` (from then on the token answers 410, as after the
  /// app was deleted), staff only when the router has an `AuthMiddleware`. Serve them through
  /// `APNsPathResponder`, which answers other paths with APNs's 404 `BadPath`.
  public var routes: [Route] {
    [
      Route("POST", "/3/device/{token}", push),
      Route(
        "POST", "/3/device", { _ in Self.answer(APNsResponse(status: 400, reason: "MissingDeviceToken")) }),
      Route("POST", "/1/apps/{bundle}/channels", createChannel),
      Route("DELETE", "/1/apps/{bundle}/channels", deleteChannel),
      Route("GET", "/1/apps/{bundle}/all-channels", listChannels),
      Route("POST", "/4/broadcasts/apps/{bundle}", broadcast),
      Route("GET", "/v1/sim/devices/{token}", auth: .roles([.staff]), record),
      Route("GET", "/v1/sim/channels/{channel}", auth: .roles([.staff]), channelRecord),
      Route("POST", "/v1/sim/devices/{token}/unregister", auth: .roles([.staff]), unregister),
    ]
      + ["GET", "PUT", "DELETE", "PATCH"].map { method in
        Route(method, "/3/device/{token}") { _ in
          Self.answer(APNsResponse(status: 405, reason: "MethodNotAllowed"))
        }
      }
  }

  @Sendable func record(_ http: HTTPRequest) throws -> HTTPResponse { try Self.record(http, simulator) }

  @Sendable func unregister(_ http: HTTPRequest) throws -> HTTPResponse {
    try Self.unregister(http, simulator)
  }

  /// `{ token, pushes: [ { receivedAt, status, reason?, headers, payload } ] }`, oldest first:
  /// what `simulator` recorded for the path's token (the gateway serves the same).
  public static func record(_ http: HTTPRequest, _ simulator: APNsSimulator) throws -> HTTPResponse {
    let token = try http.pathParameter("token").lowercased()
    struct Reply: Encodable {
      var token: String
      var pushes: [APNsSimulator.Received]
    }
    return try HTTPResponse.json(value: Reply(token: token, pushes: try simulator.received(by: token)))
  }

  /// `{ token, unregisteredAt }`: pushes to the path's token answer 410 `Unregistered` from now
  /// on, with this time as APNs's `timestamp` (asking again keeps the first time).
  public static func unregister(_ http: HTTPRequest, _ simulator: APNsSimulator) throws -> HTTPResponse {
    let token = try http.pathParameter("token").lowercased()
    struct Reply: Encodable {
      var token: String
      var unregisteredAt: Date
    }
    return try HTTPResponse.json(value: Reply(token: token, unregisteredAt: simulator.unregister(token)))
  }

  @Sendable func push(_ http: HTTPRequest) async throws -> HTTPResponse {
    let id = http.headers["apns-id"] ?? UUID().uuidString.lowercased()
    if case .rejected(let rejection) = verifier.check(authorizationHeader: http.headers["authorization"]) {
      return Self.answer(APNsResponse(status: rejection.status, reason: rejection.reason, id: id))
    }
    let request: APNsRequest
    switch Self.request(from: http, id: id) {
    case .success(let parsed): request = parsed
    case .failure(let refusal): return Self.answer(refusal.response)
    }
    return Self.answer(try await simulator.send(request))
  }

  // MARK: - Channels and broadcasts (iOS 18)

  /// The provider token, as for pushes; nil when it passes.
  private func refusal(_ http: HTTPRequest) -> HTTPResponse? {
    if case .rejected(let rejection) = verifier.check(authorizationHeader: http.headers["authorization"]) {
      return Self.answer(APNsResponse(status: rejection.status, reason: rejection.reason))
    }
    return nil
  }

  /// `POST /1/apps/{bundle}/channels` `{ "message-storage-policy": 0 | 1, "push-type": "LiveActivity" }`
  /// → 201 with `apns-channel-id`; 400 `BadMessageStoragePolicy`, `InvalidPushType` or
  /// `BadTopic` (another app), or the simulator's answer.
  @Sendable func createChannel(_ http: HTTPRequest) async throws -> HTTPResponse {
    if let refused = refusal(http) { return refused }
    let bundle = try http.pathParameter("bundle")
    guard case .object(let body)? = try? JSON.decode(JSONValue.self, from: Data(http.body)) else {
      return Self.answer(APNsResponse(status: 400, reason: "BadMessageStoragePolicy"))
    }
    guard case .number(let policy)? = body["message-storage-policy"] else {
      return Self.answer(APNsResponse(status: 400, reason: "BadMessageStoragePolicy"))
    }
    guard case .string(let type)? = body["push-type"], type.lowercased() == "liveactivity" else {
      return Self.answer(APNsResponse(status: 400, reason: "InvalidPushType"))
    }
    let created = try await simulator.createChannel(
      APNsChannelRequest(
        bundleID: bundle, storagePolicy: Int(policy), id: http.headers["apns-request-id"] ?? ""))
    return Self.answer(created)
  }

  /// `DELETE /1/apps/{bundle}/channels` with `apns-channel-id` → 204, or 400 `MissingChannelId`
  /// / `BadChannelId`.
  @Sendable func deleteChannel(_ http: HTTPRequest) throws -> HTTPResponse {
    if let refused = refusal(http) { return refused }
    guard let id = http.headers["apns-channel-id"], !id.isEmpty else {
      return Self.answer(APNsResponse(status: 400, reason: "MissingChannelId"))
    }
    return Self.answer(try simulator.deleteChannel(id))
  }

  /// `GET /1/apps/{bundle}/all-channels` → `{ "channels": [ … ] }`.
  @Sendable func listChannels(_ http: HTTPRequest) throws -> HTTPResponse {
    if let refused = refusal(http) { return refused }
    return try HTTPResponse.json(value: ["channels": simulator.channelIDs])
  }

  /// `POST /4/broadcasts/apps/{bundle}` with `apns-channel-id`, `apns-push-type: LiveActivity`,
  /// `apns-priority` (1, 5 or 10) and `apns-expiration`: the simulator's answer, or 400
  /// `MissingChannelId`, `InvalidPushType`, `BadPriority`, `BadExpirationDate`.
  @Sendable func broadcast(_ http: HTTPRequest) async throws -> HTTPResponse {
    let id = http.headers["apns-request-id"] ?? UUID().uuidString.lowercased()
    if let refused = refusal(http) { return refused }
    func refuse(_ reason: String) -> HTTPResponse {
      Self.answer(APNsResponse(status: 400, reason: reason, id: id))
    }
    guard let channel = http.headers["apns-channel-id"], !channel.isEmpty else {
      return refuse("MissingChannelId")
    }
    guard http.headers["apns-push-type"]?.lowercased() == "liveactivity" else {
      return refuse("InvalidPushType")
    }
    let priority: Int
    let expiration: Date?
    switch Self.priorityAndExpiration(http) {
    case .success(let read): (priority, expiration) = read
    case .failure(let reason): return refuse(reason.text)
    }
    let response = try await simulator.broadcast(
      APNsBroadcastRequest(
        channelID: channel, bundleID: try http.pathParameter("bundle"), priority: priority,
        expiration: expiration,
        id: id, payload: http.body))
    return Self.answer(response)
  }

  /// `{ channel, pushes: [ … ] }`: what the simulator recorded for a channel.
  @Sendable func channelRecord(_ http: HTTPRequest) throws -> HTTPResponse {
    try Self.channelRecord(http, simulator)
  }

  /// `{ channel, pushes: [ … ] }` for the path's channel (the gateway serves the same).
  public static func channelRecord(_ http: HTTPRequest, _ simulator: APNsSimulator) throws -> HTTPResponse {
    let channel = try http.pathParameter("channel")
    struct Reply: Encodable {
      var channel: String
      var pushes: [APNsSimulator.Received]
    }
    return try HTTPResponse.json(
      value: Reply(channel: channel, pushes: try simulator.broadcasts(to: channel)))
  }

  /// The HTTP answer APNs gives to a channel request: 201 with `apns-channel-id`, 204, or the
  /// status with its reason.
  static func answer(_ response: APNsChannelResponse) -> HTTPResponse {
    guard response.reason == nil else {
      return answer(APNsResponse(status: response.status, reason: response.reason))
    }
    var headers = HTTPHeaders()
    if let id = response.channelID { headers.add("apns-channel-id", id) }
    return HTTPResponse(status: response.status, headers: headers)
  }

  /// A request APNs would refuse before looking at it further.
  struct Refusal: Error {
    var response: APNsResponse
  }

  /// The `APNsRequest` the headers, path and body describe, with APNs's defaults; or the 400 APNs
  /// answers for a header it cannot read.
  static func request(from http: HTTPRequest, id: String) -> Result<APNsRequest, Refusal> {
    func refuse(_ reason: String) -> Result<APNsRequest, Refusal> {
      .failure(Refusal(response: APNsResponse(status: 400, reason: reason, id: id)))
    }
    guard let token = try? http.pathParameter("token"), !token.isEmpty else {
      return refuse("MissingDeviceToken")
    }
    guard let type = http.headers["apns-push-type"].flatMap(APNsRequest.PushType.init(rawValue:)) else {
      return refuse("InvalidPushType")
    }
    guard let topic = http.headers["apns-topic"], !topic.isEmpty else { return refuse("MissingTopic") }
    let priority: Int
    let expiration: Date?
    switch priorityAndExpiration(http) {
    case .success(let read): (priority, expiration) = read
    case .failure(let reason): return refuse(reason.text)
    }
    return .success(
      APNsRequest(
        token: token, pushType: type, topic: topic, priority: priority, expiration: expiration, id: id,
        collapseID: http.headers["apns-collapse-id"], payload: http.body))
  }

  /// A header APNs cannot read: its reason.
  struct Unreadable: Error {
    var text: String
  }

  /// `apns-priority` (default 10) and `apns-expiration` (0: deliver now or never, nil), or the
  /// reason APNs gives for one it cannot read.
  static func priorityAndExpiration(_ http: HTTPRequest) -> Result<(Int, Date?), Unreadable> {
    var priority = 10
    if let text = http.headers["apns-priority"] {
      guard let number = Int(text) else { return .failure(Unreadable(text: "BadPriority")) }
      priority = number
    }
    var expiration: Date?
    if let text = http.headers["apns-expiration"] {
      guard let seconds = Int64(text), seconds >= 0 else {
        return .failure(Unreadable(text: "BadExpirationDate"))
      }
      expiration = seconds == 0 ? nil : Date(timeIntervalSince1970: TimeInterval(seconds))
    }
    return .success((priority, expiration))
  }

  /// The HTTP answer APNs gives for `response`.
  static func answer(_ response: APNsResponse) -> HTTPResponse {
    var headers = HTTPHeaders()
    if let id = response.id { headers.add("apns-id", id) }
    guard response.status != 200 else { return HTTPResponse(status: 200, headers: headers) }
    // Written by hand so the timestamp is an integer of milliseconds, as APNs writes it.
    var body = #"{"reason":"# + jsonString(response.reason ?? "InternalServerError")
    if let timestamp = response.timestamp {
      body += #","timestamp":"# + String(Int64((timestamp.timeIntervalSince1970 * 1000).rounded(.down)))
    }
    body += "}"
    headers.add("Content-Type", "application/json")
    let bytes = Array(body.utf8)
    return HTTPResponse(status: response.status, headers: headers, body: bytes)
  }

  /// `text` as a JSON string literal.
  private static func jsonString(_ text: String) -> String {
    (try? JSON.encoder().encode(text)).map { String(decoding: $0, as: UTF8.self) } ?? #""""#
  }
}
