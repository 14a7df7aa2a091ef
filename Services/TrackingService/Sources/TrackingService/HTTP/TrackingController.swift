import Foundation
import GrocerContracts
import GrocerCore
import GrocerHTTP
import GrocerRuntime

/// TrackingService's HTTP API: customers read their orders' tracking and register a Live
/// Activity token; hub staff and the assigned rider move the order and report positions.
///
/// Someone else's order is a 404, exactly as if it did not exist.
struct TrackingController: Sendable {
  let commands: TrackingCommands
  let clock: any WallClock
  /// How long a finished order stays in `GET /v1/orders/active`.
  let finishedRetention: TimeInterval
  /// How far in the future a fix's `recordedAt` may be (clocks differ a little).
  let clockSkew: TimeInterval

  /// Whether polls may be answered from what this process remembers: not when other replicas
  /// write the same database (their changes would not be seen).
  var answersFromMemory: Bool { !commands.store.database.mayHaveOtherWriters }

  var routes: [Route] {
    let tracking = Route("GET", "/v1/orders/{id}/tracking", auth: .required, tracking)
    return [
      Route("GET", "/v1/orders/active", auth: .required, active),
      Route("GET", "/v1/orders/{id}/tracking/events", auth: .required, events),
      // Answered inside the transport's callback when remembered (Benchmarks/tracking).
      answersFromMemory
        ? tracking.answeringFromMemory { request in try trackingFromMemory(request) } : tracking,
      Route("PUT", "/v1/orders/{id}/live-activity-token", auth: .required, putToken),
      Route("POST", "/v1/orders/{id}/status", auth: .roles([.staff, .rider]), postStatus),
      Route.answeredByCallback("POST", "/v1/orders/{id}/rider", auth: .roles([.rider]), postFix),
    ]
  }

  // MARK: - Customers

  @Sendable func active(_ request: HTTPRequest) async throws -> HTTPResponse {
    let principal = try Self.principal(request)
    let since = clock.now() - finishedRetention
    let commands = self.commands
    let records = try await Self.storage {
      try await runBlocking { try commands.active(user: principal.subject, finishedSince: since) }
    }
    return try Self.json(["orders": records.map(commands.reply)])
  }

  /// A known order answered from memory; nil reads it from the database.
  func trackingFromMemory(_ request: HTTPRequest) throws -> HTTPResponse? {
    guard answersFromMemory else { return nil }
    let principal = try Self.principal(request)
    let id = try request.pathParameter("id")
    guard let entry = commands.replies.entry(id, at: clock.now()), let body = entry.body else { return nil }
    guard TrackingAccess.mayRead(principal, userId: entry.userId, hub: entry.hub, riderId: entry.riderId)
    else { throw Self.http(.notFound(id)) }
    return HTTPResponse.json(bytes: body, headers: ["Cache-Control": "private, no-store"])
  }

  @Sendable func tracking(_ request: HTTPRequest) async throws -> HTTPResponse {
    if let remembered = try trackingFromMemory(request) { return remembered }
    let principal = try Self.principal(request)
    let id = try request.pathParameter("id")
    let commands = self.commands
    guard let record = try await Self.storage({ try await runBlocking { try commands.record(id) } }),
      TrackingAccess.mayRead(principal, record)
    else { throw Self.http(.notFound(id)) }
    return Self.json(commands.reply(record))
  }

  /// Server-sent events: the snapshot at once (unless the client's `Last-Event-ID` has it), then
  /// each newer version as it commits, `id:` its version; heartbeats meanwhile; closed after a
  /// final state. The snapshot's access rules.
  @Sendable func events(_ request: HTTPRequest) async throws -> HTTPResponse {
    let principal = try Self.principal(request)
    let id = try request.pathParameter("id")
    let after = try Self.lastEventID(request)
    let commands = self.commands
    guard let record = try await Self.storage({ try await runBlocking { try commands.record(id) } }),
      TrackingAccess.mayRead(principal, record)
    else { throw Self.http(.notFound(id)) }
    let stream = commands.streams.open(id, hub: record.hub, after: after)
    // Read again once the stream listens, so a version committed in between is not missed.
    let current = try await Self.storage { try await runBlocking { try commands.store.record(id) } } ?? record
    commands.streams.start(stream, orderId: id, with: current, at: clock.now())
    return .eventStream(stream)
  }

  /// `Last-Event-ID`: the version the client has (0 without one).
  static func lastEventID(_ request: HTTPRequest) throws -> Int64 {
    guard let text = request.headers["Last-Event-ID"]?.trimmingCharacters(in: .whitespaces), !text.isEmpty
    else {
      return 0
    }
    guard let version = Int64(text), version >= 0 else {
      throw HTTPError.badRequest(
        code: "invalidLastEventId", detail: "`Last-Event-ID` is a version this stream sent")
    }
    return version
  }

  struct TokenBody: StrictBody {
    static let allowedKeys: Set<String> = ["token"]
    var token: String
  }

  @Sendable func putToken(_ request: HTTPRequest) async throws -> HTTPResponse {
    let principal = try Self.principal(request)
    let id = try request.pathParameter("id")
    let body = try Self.decode(TokenBody.self, request)
    let token: String
    do { token = try TrackingInput.liveActivityToken(body.token) } catch { throw Self.http(error) }
    let commands = self.commands
    let correlation = request.requestID
    try await Self.storage {
      try await commands.store.database.onWriterQueue {
        _ = try commands.setLiveActivityToken(token, for: id, correlationID: correlation) { record in
          try TrackingAccess.mayRegisterToken(principal, record)
        }
      }
    }
    return .noContent()
  }

  // MARK: - Staff and riders

  /// `{ "status": "picking" }`, `{ "status": "onTheWay", "rider": { "id", "firstName" } }`,
  /// `{ "status": "cancelled", "reason" }`, `{ "status": "problem", "message" }`.
  struct StatusBody: StrictBody {
    static let allowedKeys: Set<String> = ["status", "rider", "reason", "message"]
    var status: String
    var rider: AssignedRider?
    var reason: String?
    var message: String?

    static let maximumText = 300
    /// Texts reach the lock screen through a 4 KB push: bytes count, not only characters.
    static let maximumTextBytes = 600

    func command() throws -> TrackingCommand {
      func text(_ value: String?, _ field: String) throws -> String {
        let trimmed = value?.trimmingCharacters(in: .whitespacesAndNewlines) ?? ""
        guard !trimmed.unicodeScalars.contains(where: { $0.properties.generalCategory == .control }) else {
          throw TrackingError(.invalid, "\(field)Invalid", "`\(field)` must not contain control characters")
        }
        guard !trimmed.isEmpty, trimmed.count <= Self.maximumText, trimmed.utf8.count <= Self.maximumTextBytes
        else {
          throw TrackingError(
            .invalid, "\(field)Required", "`\(field)` is required (1–\(Self.maximumText) characters)")
        }
        return trimmed
      }
      guard let target = TrackingStatus(rawValue: status), target != .placed else {
        throw TrackingError(
          .invalid, "unknownStatus",
          "`status` must be one of picking, onTheWay, arriving, delivered, cancelled, problem")
      }
      switch target {
      case .picking: return .picking
      case .onTheWay:
        guard let rider, Identifier.isValid(rider.id) else {
          throw TrackingError(.invalid, "riderRequired", "`onTheWay` names the rider: `{ id, firstName }`")
        }
        return .onTheWay(
          rider: AssignedRider(id: rider.id, firstName: try text(rider.firstName, "firstName")))
      case .arriving: return .arriving
      case .delivered: return .delivered
      case .cancelled: return .cancelled(reason: try text(reason, "reason"))
      case .problem: return .problem(message: try text(message, "message"))
      case .placed: throw TrackingError(.invalid, "unknownStatus", "an order cannot be placed again")
      }
    }
  }

  @Sendable func postStatus(_ request: HTTPRequest) async throws -> HTTPResponse {
    let principal = try Self.principal(request)
    let id = try request.pathParameter("id")
    let command: TrackingCommand
    do { command = try Self.decode(StatusBody.self, request).command() } catch let error as TrackingError {
      throw Self.http(error)
    }
    let commands = self.commands
    let correlation = request.requestID
    let change = try await Self.storage {
      try await commands.store.database.onWriterQueue {
        try commands.move(id, by: command, correlationID: correlation) { record in
          try TrackingAccess.mayMove(principal, record, command)
        }
      }
    }
    return Self.json(commands.reply(change.record))
  }

  /// `{ "lat", "lng", "recordedAt" }` from the assigned rider.
  struct FixBody: StrictBody, Equatable {
    static let allowedKeys: Set<String> = ["lat", "lng", "recordedAt"]
    var lat: Double
    var lng: Double
    var recordedAt: Date

    /// The usual fix read by hand (a rider sends one every few seconds); nil for anything else —
    /// an unknown or repeated key, a value of another type — which `StrictJSON` then reads and
    /// explains.
    static func fast(_ body: [UInt8]) -> FixBody? {
      var reader = JSONReader(body)
      var (lat, lng, recordedAt): (Double?, Double?, Date?)
      do {
        try reader.readObject { reader, key in
          switch key {
          case "lat" where lat == nil: lat = try reader.readDouble()
          case "lng" where lng == nil: lng = try reader.readDouble()
          case "recordedAt" where recordedAt == nil: recordedAt = try reader.readDate()
          default: throw JSONReader.Failure("unknown or repeated key")
          }
        }
        try reader.finish()
      } catch {
        return nil
      }
      guard let lat, let lng, let recordedAt else { return nil }
      return FixBody(lat: lat, lng: lng, recordedAt: recordedAt)
    }
  }

  /// Checked on the transport's thread, then recorded on the database's writer queue, whose
  /// completion answers (`Route.answeredByCallback`): a rider sends one every few seconds, and a
  /// task and a continuation of the request's own were most of what a fix cost (Benchmarks/tracking).
  @Sendable func postFix(
    _ request: HTTPRequest, _ done: @escaping @Sendable (Result<HTTPResponse, any Error>) -> Void
  ) {
    let principal: Principal
    let id: String
    let fix: FixBody
    do {
      principal = try Self.principal(request)
      id = try request.pathParameter("id")
      fix = try Self.decode(FixBody.self, request)
      do {
        try TrackingInput.checkFix(
          lat: fix.lat, lng: fix.lng, recordedAt: fix.recordedAt, now: clock.now(), clockSkew: clockSkew)
      } catch { throw Self.http(error) }
    } catch {
      return done(.failure(error))
    }
    let commands = self.commands
    let correlation = request.requestID
    commands.store.database.submitWrite({
      try commands.recordFix(
        for: id, lat: fix.lat, lng: fix.lng, recordedAt: fix.recordedAt, correlationID: correlation
      ) { record in
        try TrackingAccess.mayReportFix(principal, record)
      }
    }) { result in
      switch result {
      case .success(let change):
        var response = Self.json(commands.reply(change.record))
        if case .unchanged = change { response.headers.add("Grocer-Fix-Ignored", "older than the fix held") }
        done(.success(response))
      case .failure(let error):
        done(.failure(Self.answer(error)))
      }
    }
  }

  // MARK: - Helpers

  static func principal(_ request: HTTPRequest) throws -> Principal {
    guard let principal = request.principal else { throw HTTPError.unauthorized() }
    return principal
  }

  static func decode<T: StrictBody>(_ type: T.Type, _ request: HTTPRequest) throws -> T {
    try request.requireJSONBody()
    do { return try T.decode(from: request.body, mappingErrors: TrackingError.init) } catch {
      throw http(error)
    }
  }

  /// Personal data: never in a shared cache.
  static func json(_ value: some Encodable) throws -> HTTPResponse {
    try HTTPResponse.json(value: value, headers: Self.personal)
  }

  /// One snapshot, written by hand as the encoder would (every rider fix answers one).
  static func json(_ snapshot: TrackingSnapshot) -> HTTPResponse {
    HTTPResponse.json(bytes: snapshot.jsonBytes, headers: Self.personal)
  }

  static let personal: HTTPHeaders = ["Cache-Control": "private, no-store"]

  static func http(_ error: TrackingError) -> HTTPError {
    switch error.kind {
    case .malformed: .badRequest(code: error.code, detail: error.detail)
    case .invalid: .unprocessable(code: error.code, detail: error.detail)
    case .notFound: .notFound(code: error.code, detail: error.detail)
    case .forbidden: .forbidden(code: error.code, detail: error.detail)
    case .conflict: .conflict(code: error.code, detail: error.detail)
    }
  }

  /// A rule's refusal is its problem; storage trouble a 503 with `Retry-After`, never a 500.
  static func storage<T: Sendable>(_ body: () async throws -> T) async throws -> T {
    do { return try await body() } catch { throw answer(error) }
  }

  /// What a request answers for an error of its use case: a `TrackingError` as its status, an
  /// `HTTPError` as it is, anything else (storage trouble) 503.
  static func answer(_ error: any Error) -> any Error {
    if let error = error as? TrackingError { return http(error) }
    return HTTPError.answering(error, database: "tracking")
  }
}
