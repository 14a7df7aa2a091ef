import APNsSimulator
import Foundation
import GrocerContracts
import GrocerCore
import GrocerHTTP
import GrocerRuntime

/// NotifyGateway's HTTP API: the app registers and removes its device token; operators (and
/// tests) read what the APNs simulator received.
struct NotifyController: Sendable {
  let commands: NotifyCommands
  /// Set when pushes go to the simulator.
  let simulator: APNsSimulator?

  var routes: [Route] {
    var routes = [
      Route("PUT", "/v1/devices/{token}", auth: .required, putDevice),
      Route("DELETE", "/v1/devices/{token}", auth: .required, deleteDevice),
      Route("PUT", "/v1/devices/{token}/live-activity-start-token", auth: .required, putStartToken),
      Route("DELETE", "/v1/devices/{token}/live-activity-start-token", auth: .required, deleteStartToken),
      Route("POST", "/v1/hubs/{hub}/notices", auth: .roles([.staff]), postNotice),
      Route("GET", "/v1/hubs/{hub}/notices", auth: .required, getNotice),
    ]
    if let simulator {
      routes += [
        Route("GET", "/v1/sim/devices/{token}", auth: .roles([.staff])) {
          try APNsSimulatorRoutes.record($0, simulator)
        },
        Route("POST", "/v1/sim/devices/{token}/unregister", auth: .roles([.staff])) {
          try APNsSimulatorRoutes.unregister($0, simulator)
        },
        Route("GET", "/v1/sim/channels/{channel}", auth: .roles([.staff])) {
          try APNsSimulatorRoutes.channelRecord($0, simulator)
        },
      ]
    }
    return routes
  }

  /// A device token: 64 hex digits (32 bytes), stored lowercase.
  static func deviceToken(_ request: HTTPRequest) throws -> String {
    let token = try request.pathParameter("token").lowercased()
    guard APNsRules.isValidToken(token, for: .alert) else {
      throw HTTPError.unprocessable(
        code: "invalidDeviceToken", detail: "a device token is 64 hexadecimal digits")
    }
    return token
  }

  @Sendable func putDevice(_ request: HTTPRequest) async throws -> HTTPResponse {
    guard let user = request.principal?.subject else { throw HTTPError.unauthorized() }
    let token = try Self.deviceToken(request)
    let commands = self.commands
    try await Self.storage {
      try await commands.store.database.onWriterQueue { try commands.registerDevice(token, user: user) }
    }
    return .noContent()
  }

  @Sendable func deleteDevice(_ request: HTTPRequest) async throws -> HTTPResponse {
    guard let user = request.principal?.subject else { throw HTTPError.unauthorized() }
    let token = try Self.deviceToken(request)
    let commands = self.commands
    guard
      try await Self.storage({
        try await commands.store.database.onWriterQueue { try commands.removeDevice(token, user: user) }
      })
    else { throw HTTPError.notFound(code: "deviceNotFound", detail: "this token is not registered for you") }
    return .noContent()
  }

  struct StartTokenBody: StrictBody {
    static let allowedKeys: Set<String> = ["token"]
    var token: String
  }

  /// `{ "token": "…hex…" }`: the device's push-to-start token (`pushToStartTokenUpdates`), kept
  /// for the device's user; the device must be registered for them.
  @Sendable func putStartToken(_ request: HTTPRequest) async throws -> HTTPResponse {
    guard let user = request.principal?.subject else { throw HTTPError.unauthorized() }
    let device = try Self.deviceToken(request)
    let body = try Self.decode(StartTokenBody.self, request)
    let startToken = body.token.lowercased()
    guard APNsRules.isValidToken(startToken, for: .liveactivity) else {
      throw HTTPError.unprocessable(
        code: "invalidStartToken", detail: "a push-to-start token is 66 to 400 hexadecimal digits")
    }
    try await setStartToken(startToken, device: device, user: user)
    return .noContent()
  }

  @Sendable func deleteStartToken(_ request: HTTPRequest) async throws -> HTTPResponse {
    guard let user = request.principal?.subject else { throw HTTPError.unauthorized() }
    try await setStartToken(nil, device: try Self.deviceToken(request), user: user)
    return .noContent()
  }

  private func setStartToken(_ startToken: String?, device: String, user: String) async throws {
    let commands = self.commands
    guard
      try await Self.storage({
        try await commands.store.database.onWriterQueue {
          try commands.setStartToken(startToken, device: device, user: user)
        }
      })
    else {
      throw HTTPError.notFound(code: "deviceNotFound", detail: "this device token is not registered for you")
    }
  }

  struct NoticeBody: StrictBody {
    static let allowedKeys: Set<String> = ["title", "body", "minutes"]
    var title: String
    var body: String
    var minutes: Int?
  }

  /// Staff of the hub post a notice: `{ title, body, minutes? }` → 201 with the notice. It is
  /// broadcast to the hub's APNs channel and shows in the tracking of the hub's running orders.
  @Sendable func postNotice(_ request: HTTPRequest) async throws -> HTTPResponse {
    guard let principal = request.principal else { throw HTTPError.unauthorized() }
    let hub = try Self.hub(request)
    guard principal.isStaff(of: hub) else {
      throw HTTPError.forbidden(code: "notYourHub", detail: "staff of \(hub) post its notices")
    }
    let body = try Self.decode(NoticeBody.self, request)
    let commands = self.commands
    let correlation = request.requestID
    let notice = try await Self.storage {
      do {
        return try await commands.store.database.onWriterQueue {
          try commands.postNotice(
            hub: hub, title: body.title, body: body.body, minutes: body.minutes, correlationID: correlation)
        }
      } catch let refusal as HubNoticeRules.Refusal {
        throw HTTPError.unprocessable(code: refusal.code, detail: refusal.detail)
      }
    }
    return try HTTPResponse.json(status: 201, value: notice)
  }

  /// `{ hub, channelId, notice }`: the hub's APNs channel (null before its first notice), which
  /// the app subscribes a hub-news Live Activity to, and the notice showing now (or null).
  @Sendable func getNotice(_ request: HTTPRequest) async throws -> HTTPResponse {
    let hub = try Self.hub(request)
    let commands = self.commands
    let current = try await Self.storage { try await runBlocking { try commands.currentNotice(hub: hub) } }
    struct Reply: Encodable {
      var hub: String
      var channelId: String?
      var notice: HubNotice?

      func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(hub, forKey: .hub)
        try container.encode(channelId, forKey: .channelId)
        try container.encode(notice, forKey: .notice)
      }
      enum CodingKeys: String, CodingKey { case hub, channelId, notice }
    }
    return try HTTPResponse.json(value: Reply(hub: hub, channelId: current.channelID, notice: current.notice))
  }

  /// The path's hub: an identifier (letters, digits, `-`, `_`), else 404 as an unknown hub.
  static func hub(_ request: HTTPRequest) throws -> String {
    let hub = try request.pathParameter("hub")
    guard Identifier.isValid(hub) else {
      throw HTTPError.notFound(code: "hubNotFound", detail: "no hub \(hub)")
    }
    return hub
  }

  /// A body read strictly: malformed JSON, a missing, mistyped or unknown field is a 400.
  static func decode<T: StrictBody>(_ type: T.Type, _ request: HTTPRequest) throws -> T {
    try request.requireJSONBody()
    return try T.decode(from: request.body) { (error: BodyError) -> HTTPError in
      let problem = error.problem ?? ("invalidBody", "The body is not valid.")
      return HTTPError.badRequest(code: problem.code, detail: problem.detail)
    }
  }

  static func storage<T: Sendable>(_ body: () async throws -> T) async throws -> T {
    try await answeringStorageTroubleAs503(database: "notification", body)
  }
}
