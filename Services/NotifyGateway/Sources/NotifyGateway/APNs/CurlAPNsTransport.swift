import APNsSimulator
import Foundation
import GrocerAuth
import GrocerCore
import GrocerHTTPClient
import GrocerRuntime

/// Where the real transport sends its requests.
public enum APNsHost: Sendable, Hashable {
  /// `https://api.push.apple.com`: apps from the App Store, TestFlight and ad hoc builds.
  case production
  /// `https://api.sandbox.push.apple.com`: development builds.
  case sandbox
  /// Any other base URL: the simulator's TLS front (`https://localhost:8443`), a proxy.
  case custom(String)

  /// `production`, `sandbox`, or a URL (`https://…` or `http://…`); nil for anything else.
  public init?(_ text: String) {
    switch text.lowercased() {
    case "production": self = .production
    case "sandbox", "development": self = .sandbox
    default:
      guard text.hasPrefix("https://") || text.hasPrefix("http://") else { return nil }
      self = .custom(text.hasSuffix("/") ? String(text.dropLast()) : text)
    }
  }

  public var url: String {
    switch self {
    case .production: "https://api.push.apple.com"
    case .sandbox: "https://api.sandbox.push.apple.com"
    case .custom(let url): url
    }
  }

  /// Where channel management requests go (broadcasts themselves go to `url`).
  public var managementURL: String {
    switch self {
    case .production: "https://api-manage-broadcast.push.apple.com:2196"
    case .sandbox: "https://api-manage-broadcast.sandbox.push.apple.com:2195"
    case .custom(let url): url
    }
  }
}

/// The real APNs provider API: `POST /3/device/<token>` over HTTP/2 (libcurl, multiplexed over
/// one TLS connection) with `authorization: bearer <ES256 JWT>`.
///
/// Started and stopped with the service (it owns its `HTTP2Client`). Every request carries the
/// one cached provider token (`APNsProviderToken`); when APNs answers 403 `ExpiredProviderToken`
/// the token is invalidated so the next request carries a fresh one (the refused push itself is
/// not retried: the engine counts a 403 as failed). A request that got no answer throws, and the
/// engine retries it.
///
/// ```swift
/// let token = try APNsProviderToken(
///   key: ES256Key(contentsOfFile: "AuthKey_ABC123DEFG.p8"), keyID: "ABC123DEFG", teamID: "DEF123GHIJ",
///   clock: SystemClock())
/// let transport = CurlAPNsTransport(host: .sandbox, providerToken: token, logger: logger)
/// try await transport.start()
/// let response = try await transport.send(request)
/// ```
public final class CurlAPNsTransport: APNsTransport, LifecycleService {
  public var name: String { "apns-http2" }
  /// The HTTP/2 client (its `connectionsOpened` shows the multiplexing).
  public let client: HTTP2Client
  /// Channel management's own host (APNs's production and sandbox); nil: `client`'s.
  public let managementClient: HTTP2Client?
  public let providerToken: APNsProviderToken
  private let logger: Logger

  /// - Parameters:
  ///   - host: APNs production, sandbox, or another base URL.
  ///   - caFile: a PEM file of CA certificates to trust instead of the system's (a test front's
  ///     self-signed certificate).
  ///   - requestTimeout: the whole request, connecting included.
  public convenience init(
    host: APNsHost, providerToken: APNsProviderToken, logger: Logger, caFile: String? = nil,
    requestTimeout: Duration = .seconds(10), maxInFlight: Int = 1000
  ) {
    func client(_ url: String, _ name: String) -> HTTP2Client {
      HTTP2Client(
        configuration: HTTP2ClientConfiguration(
          baseURL: url, versionMode: .http2TLS, requestTimeout: requestTimeout, caFile: caFile,
          maxInFlight: maxInFlight, name: name), logger: logger)
    }
    self.init(
      client: client(host.url, "apns-http2"),
      managementClient: host.managementURL == host.url ? nil : client(host.managementURL, "apns-channels"),
      providerToken: providerToken, logger: logger)
  }

  /// Uses `client` as given (its base URL is APNs's host), and `managementClient` for channel
  /// requests (nil: `client`); the transport starts and stops them.
  public init(
    client: HTTP2Client, managementClient: HTTP2Client? = nil, providerToken: APNsProviderToken,
    logger: Logger
  ) {
    self.client = client
    self.managementClient = managementClient
    self.providerToken = providerToken
    self.logger = logger.with(["apns.host": client.configuration.baseURL])
  }

  public func start() async throws {
    try await client.start()
    try await managementClient?.start()
  }

  public func shutdown() async {
    await managementClient?.shutdown()
    await client.shutdown()
  }

  public func finished() async throws {
    try await client.finished()
    try await managementClient?.finished()
  }

  /// `POST /1/apps/<bundle>/channels` on the channel management host: 201 with the new
  /// channel's `apns-channel-id`, or APNs's reason.
  public func createChannel(_ request: APNsChannelRequest) async throws -> APNsChannelResponse {
    let reply = try await (managementClient ?? client).send(
      HTTPClientRequest(
        method: "POST", path: request.path,
        headers: [
          ("apns-request-id", request.id), ("authorization", providerToken.authorizationHeaderValue()),
          ("content-type", "application/json"),
        ], body: request.body))
    guard let response = Self.response(reply, requestID: request.id) else {
      throw APNsTransportError.noAnswerFromAPNs(status: reply.status)
    }
    return APNsChannelResponse(
      status: response.status, channelID: reply.header("apns-channel-id"),
      reason: response.status == 201 ? nil : response.reason)
  }

  /// `POST /4/broadcasts/apps/<bundle>` with the channel's id: APNs's answer.
  public func broadcast(_ request: APNsBroadcastRequest) async throws -> APNsResponse {
    try await post(request.path, headers: request.headers, body: request.payload, id: request.id)
  }

  public func send(_ request: APNsRequest) async throws -> APNsResponse {
    let response = try await post(
      request.path, headers: request.headers, body: request.payload, id: request.id)
    if response.status == 403 && response.reason == "ExpiredProviderToken" {
      let renewed = providerToken.invalidate()
      logger.warning(
        "APNs refused the provider token as expired",
        [
          "apns.token_issued_at": "\(providerToken.issuedAt.map { "\($0)" } ?? "none")",
          "renewed": "\(renewed)",
        ])
    }
    return response
  }

  /// POSTs to APNs with the provider token; APNs's answer, or thrown when none came.
  private func post(_ path: String, headers: [String: String], body: [UInt8], id: String) async throws
    -> APNsResponse
  {
    var fields = headers.sorted { $0.key < $1.key }.map { ($0.key, $0.value) }
    fields.append(("authorization", providerToken.authorizationHeaderValue()))
    let reply = try await client.send(
      HTTPClientRequest(method: "POST", path: path, headers: fields, body: body))
    guard let response = Self.response(reply, requestID: id) else {
      throw APNsTransportError.noAnswerFromAPNs(status: reply.status)
    }
    return response
  }

  /// APNs's answer read from the HTTP response: the status, `reason` and (410) `timestamp` from
  /// the JSON body, the `apns-id` header (or the request's id when the header is missing).
  ///
  /// Nil for a 502 or 504 without an APNs reason: a proxy in between answered that APNs did not,
  /// which is no answer (thrown, so retried), not a refusal.
  static func response(_ reply: HTTPClientResponse, requestID: String) -> APNsResponse? {
    struct Body: Decodable {
      var reason: String?
      /// Milliseconds since 1970.
      var timestamp: Double?
    }
    let body = reply.body.isEmpty ? nil : try? JSONDecoder().decode(Body.self, from: Data(reply.body))
    if body?.reason == nil && (reply.status == 502 || reply.status == 504) { return nil }
    let reason = body?.reason ?? (reply.status == 200 ? nil : Self.fallbackReason(reply.status))
    return APNsResponse(
      status: reply.status, reason: reason,
      timestamp: body?.timestamp.map { Date(timeIntervalSince1970: $0 / 1000) },
      id: reply.header("apns-id") ?? requestID)
  }

  /// A reason for an error answer without a readable body (a proxy's own 502, say), so the
  /// engine's "errors by reason" still names something.
  private static func fallbackReason(_ status: Int) -> String {
    switch status {
    case 413: "PayloadTooLarge"
    case 429: "TooManyRequests"
    case 500: "InternalServerError"
    case 503: "ServiceUnavailable"
    default: "HTTP\(status)"
    }
  }
}

/// Why `CurlAPNsTransport.send` got no answer from APNs although an HTTP response came back.
public enum APNsTransportError: Error, Hashable, Sendable, CustomStringConvertible {
  /// A proxy between us and APNs answered 502/504 on its own: APNs never decided.
  case noAnswerFromAPNs(status: Int)

  public var description: String {
    switch self {
    case .noAnswerFromAPNs(let status): "no answer from APNs (a proxy answered \(status))"
    }
  }
}
