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
  let store: TrackingStore
  let clock: any WallClock
  /// How long a finished order stays in `GET /v1/orders/active`.
  let finishedRetention: TimeInterval
  /// How far in the future a fix's `recordedAt` may be (clocks differ a little).
  let clockSkew: TimeInterval

  var routes: [Route] {
    [
      Route("GET", "/v1/orders/active", auth: .required, active),
      Route("GET", "/v1/orders/{id}/tracking", auth: .required, tracking),
      Route("PUT", "/v1/orders/{id}/live-activity-token", auth: .required, putToken),
      Route("POST", "/v1/orders/{id}/status", auth: .roles([.staff, .rider]), postStatus),
      Route("POST", "/v1/orders/{id}/rider", auth: .roles([.rider]), postFix),
    ]
  }

  // MARK: - Customers

  @Sendable func active(_ request: HTTPRequest) async throws -> HTTPResponse {
    let principal = try Self.principal(request)
    let since = clock.now() - finishedRetention
    let store = self.store
    let records = try await Self.storage {
      try await runBlocking { try store.active(user: principal.subject, finishedSince: since) }
    }
    return try Self.json(["orders": records.map(\.snapshot)])
  }

  /// A known order answered from memory; nil reads it from the database.
  func trackingFromMemory(_ request: HTTPRequest) throws -> HTTPResponse? {
    let principal = try Self.principal(request)
    let id = try request.pathParameter("id")
    guard let entry = store.replies.entry(id), let body = entry.body else { return nil }
    let allowed =
      switch principal.role {
      case .customer: principal.subject == entry.userId
      case .staff: principal.isStaff(of: entry.hub)
      case .rider: entry.riderId == principal.subject
      }
    guard allowed else { throw Self.http(.notFound(id)) }
    return HTTPResponse.json(bytes: body, headers: ["Cache-Control": "private, no-store"])
  }

  @Sendable func tracking(_ request: HTTPRequest) async throws -> HTTPResponse {
    if let remembered = try trackingFromMemory(request) { return remembered }
    let principal = try Self.principal(request)
    let id = try request.pathParameter("id")
    let store = self.store
    guard let record = try await Self.storage({ try await runBlocking { try store.record(id) } }),
      Self.mayRead(principal, record)
    else { throw Self.http(.notFound(id)) }
    return try Self.json(record.snapshot)
  }

  struct TokenBody: StrictBody {
    static let allowedKeys: Set<String> = ["token"]
    var token: String
  }

  /// Hex digits, an even number of them, 66…400: a Live Activity push token is longer than a
  /// device token's 64 (NotifyGateway's APNs rules use the same range).
  static let tokenLengths = 66...400

  @Sendable func putToken(_ request: HTTPRequest) async throws -> HTTPResponse {
    let principal = try Self.principal(request)
    let id = try request.pathParameter("id")
    let body = try Self.decode(TokenBody.self, request)
    let token = body.token.lowercased()
    guard Self.tokenLengths.contains(token.utf8.count), token.utf8.count.isMultiple(of: 2),
      token.utf8.allSatisfy({ (0x30...0x39).contains($0) || (0x61...0x66).contains($0) })
    else {
      throw Self.http(
        TrackingError(
          .invalid, "invalidToken", "`token` must be the Live Activity push token in hex (66–400 digits)"))
    }
    let store = self.store
    let correlation = request.requestID
    try await Self.storage {
      try await store.database.onWriterQueue {
        guard let record = try store.record(id), record.userId == principal.subject else {
          throw TrackingError.notFound(id)
        }
        _ = try store.setLiveActivityToken(token, for: id, correlationID: correlation)
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
    let store = self.store
    let correlation = request.requestID
    let change = try await Self.storage {
      try await store.database.onWriterQueue {
        try store.apply(command, to: id, correlationID: correlation) { record in
          try Self.mayMove(principal, record, command)
        }
      }
    }
    return try Self.json(change.record.snapshot)
  }

  /// `{ "lat", "lng", "recordedAt" }` from the assigned rider.
  struct FixBody: StrictBody {
    static let allowedKeys: Set<String> = ["lat", "lng", "recordedAt"]
    var lat: Double
    var lng: Double
    var recordedAt: Date
  }

  @Sendable func postFix(_ request: HTTPRequest) async throws -> HTTPResponse {
    let principal = try Self.principal(request)
    let id = try request.pathParameter("id")
    let fix = try Self.decode(FixBody.self, request)
    guard GeoPoint(lat: fix.lat, lng: fix.lng).isValid else {
      throw Self.http(
        TrackingError(.invalid, "invalidCoordinates", "`lat` must be in −90…90 and `lng` in −180…180"))
    }
    guard fix.recordedAt <= clock.now() + clockSkew else {
      throw Self.http(
        TrackingError(
          .invalid, "fixInTheFuture", "`recordedAt` is in the future; send the time the fix was taken"))
    }
    let store = self.store
    let correlation = request.requestID
    let change = try await Self.storage {
      try await store.database.onWriterQueue {
        try store.applyFix(
          to: id, lat: fix.lat, lng: fix.lng, recordedAt: fix.recordedAt, correlationID: correlation
        ) { record in
          guard record.state.rider?.id == principal.subject else { throw TrackingError.notFound(id) }
        }
      }
    }
    var response = try Self.json(change.record.snapshot)
    if case .unchanged = change { response.headers.add("Grocer-Fix-Ignored", "older than the fix held") }
    return response
  }

  // MARK: - Who may do what

  /// The customer who ordered, staff of the order's hub, and its assigned rider.
  static func mayRead(_ principal: Principal, _ record: TrackingRecord) -> Bool {
    switch principal.role {
    case .customer: principal.subject == record.userId
    case .staff: principal.isStaff(of: record.hub)
    case .rider: record.state.rider?.id == principal.subject
    }
  }

  /// Staff of the hub move anything; the assigned rider may say arriving, delivered or problem.
  /// A rider not assigned to the order does not see it at all (404).
  static func mayMove(_ principal: Principal, _ record: TrackingRecord, _ command: TrackingCommand) throws {
    switch principal.role {
    case .staff:
      // Another hub's order is as unknown as one that does not exist.
      guard principal.isStaff(of: record.hub) else { throw TrackingError.notFound(record.orderId) }
    case .rider:
      guard record.state.rider?.id == principal.subject else { throw TrackingError.notFound(record.orderId) }
      switch command {
      case .arriving, .delivered, .problem: return
      default:
        throw TrackingError(
          .forbidden, "notAllowedForRider", "a rider may only report arriving, delivered or a problem")
      }
    case .customer:
      throw TrackingError(.forbidden, "forbidden", "customers cannot change an order's status")
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
    try HTTPResponse.json(value: value, headers: ["Cache-Control": "private, no-store"])
  }

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
    try await answeringStorageTroubleAs503(database: "tracking") {
      do { return try await body() } catch let error as TrackingError { throw http(error) }
    }
  }
}
