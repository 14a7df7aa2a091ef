import Foundation
import GrocerAuth
import GrocerContracts
import GrocerCore
import GrocerRuntime
import Synchronization
import TrackingService

#if canImport(FoundationNetworking)
  import FoundationNetworking
#endif

/// Drives orders from `placed` to `delivered` through the public API, as customers, hub staff
/// and riders would: each simulated customer fills a cart and orders (so the whole system takes
/// part), staff move the order to picking and hand it to a rider, and the rider reports a fix
/// every `fixInterval` seconds while riding a straight line to the door, says `arriving` when
/// close, and `delivered` at the door. Every wait is divided by `speedup`; the rider moves as if
/// the full interval had passed, so a faster run covers the same route in fewer fixes' time.
///
/// For demos and push load tests (`grocer simulate`).
public final class TrackingSimulator: Sendable {
  public struct Options: Sendable, Hashable {
    /// The gateway (or one service's port, when all the paths reach it).
    public var baseURL: URL
    public var orders: Int = 5
    public var speedup: Double = 1
    public var hub: HubID = "h3"
    public var sku: SKU = "p00002"
    public var quantity: Int = 2
    /// Signs the simulated users', staff's and riders' tokens (the services' secret).
    public var secret: String
    /// Seconds between two fixes of a rider (before the speed-up).
    public var fixInterval: TimeInterval = 5
    /// How far from the door a rider starts, in metres.
    public var rideLength: Double = 1500
    /// Under this many metres from the door the rider reports `arriving`.
    public var arrivingWithin: Double = 150
    public var destination = GeoPoint(lat: 52.5155, lng: 13.4540)
    /// Names this run's users and riders apart from other runs'.
    public var runID: String = String(UUID().uuidString.prefix(6)).lowercased()

    public init(baseURL: URL, secret: String) {
      self.baseURL = baseURL
      self.secret = secret
    }
  }

  /// What a run did.
  public struct Report: Sendable, Hashable, CustomStringConvertible {
    public var ordersPlaced = 0
    public var ordersDelivered = 0
    public var fixesSent = 0
    public var requests = 0
    public var failures: [String] = []
    public var seconds: Double = 0

    public var description: String {
      var lines = [
        "orders placed \(ordersPlaced), delivered \(ordersDelivered); rider fixes \(fixesSent); "
          + "requests \(requests) in \(String(format: "%.1f", seconds)) s"
      ]
      if !failures.isEmpty {
        lines.append("failures (\(failures.count)):")
        lines += failures.prefix(20).map { "  " + $0 }
      }
      return lines.joined(separator: "\n")
    }
  }

  private let options: Options
  private let signer: HS256Signer
  private let logger: Logger
  private let report = Mutex(Report())
  private let session: URLSession

  public init(options: Options, logger: Logger) {
    self.options = options
    self.signer = HS256Signer(secret: options.secret)
    self.logger = logger
    let configuration = URLSessionConfiguration.ephemeral
    configuration.httpMaximumConnectionsPerHost = 64
    configuration.timeoutIntervalForRequest = 15
    session = URLSession(configuration: configuration)
  }

  /// Runs every order to its end (or its failure) and reports.
  public func run() async -> Report {
    let started = ContinuousClock.now
    await withTaskGroup(of: Void.self) { group in
      for index in 0..<options.orders {
        group.addTask {
          do { try await self.drive(index) } catch {
            self.report.withLock { $0.failures.append("order \(index): \(error)") }
            self.logger.warning("simulated order failed", ["index": "\(index)", "error": "\(error)"])
          }
        }
      }
    }
    let elapsed = ContinuousClock.now - started
    return report.withLock {
      $0.seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
      return $0
    }
  }

  struct Failure: Error, CustomStringConvertible {
    var description: String
  }

  // MARK: - One order

  private func drive(_ index: Int) async throws {
    let user = "sim-\(options.runID)-\(index)"
    let customer = token(user, role: .customer)

    // The customer fills a cart and orders it.
    let cart = try await call(
      "PUT", "/v1/hubs/\(options.hub)/cart/items/\(options.sku)", token: customer,
      body: ["quantity": options.quantity],
      expect: [200])
    guard let version = (try? JSONSerialization.jsonObject(with: cart) as? [String: Any])?["version"] as? Int
    else {
      throw Failure(description: "the cart reply has no version")
    }
    let placed = try await call(
      "POST", "/v1/orders", token: customer,
      body: [
        "hub": options.hub, "cartVersion": version, "payment": ["method": "applePay", "token": "tok_sim"],
        "deliverTo": ["lat": options.destination.lat, "lng": options.destination.lng],
      ], headers: ["Idempotency-Key": UUID().uuidString], expect: [201])
    guard
      let orderId = (try? JSONSerialization.jsonObject(with: placed) as? [String: Any])?["orderId"] as? String
    else { throw Failure(description: "the order reply has no orderId") }
    report.withLock { $0.ordersPlaced += 1 }

    // Tracking starts when order.confirmed reaches TrackingService.
    var tracked = false
    for _ in 0..<150 where !tracked {
      tracked =
        (try? await call("GET", "/v1/orders/\(orderId)/tracking", token: customer, expect: [200])) != nil
      if !tracked { try await Task.sleep(for: .milliseconds(200)) }
    }
    guard tracked else { throw Failure(description: "\(orderId) never appeared in tracking") }
    try await deliver(orderId, index: index)
  }

  /// Takes an order that is being tracked from `placed` to `delivered`, as hub staff and a rider
  /// would (picking, handed to the rider, fixes along the ride, arriving, delivered): for an
  /// order placed by someone else, such as the end-to-end test's customer. Throws on the first
  /// answer that is not a 200.
  public func deliver(_ orderId: String, index: Int = 0) async throws {
    let staff = token("sim-staff-\(options.runID)", role: .staff, hubs: ["*"])
    let rider = AssignedRider(
      id: "sim-rider-\(options.runID)-\(index)", firstName: Self.names[index % Self.names.count])
    let riderToken = token(rider.id, role: .rider)
    try await pause(10)
    try await call(
      "POST", "/v1/orders/\(orderId)/status", token: staff, body: ["status": "picking"], expect: [200])
    try await pause(20)
    try await call(
      "POST", "/v1/orders/\(orderId)/status", token: staff,
      body: ["status": "onTheWay", "rider": ["id": rider.id, "firstName": rider.firstName]], expect: [200])

    // The ride: a fix every interval, arriving when close, delivered at the door.
    let route = RiderRoute(
      towards: options.destination, from: options.rideLength, bearing: Double(index) * 2.399963, speed: 4.5)
    var elapsed: TimeInterval = 0
    var arriving = false
    while true {
      let position = route.position(after: elapsed)
      try await call(
        "POST", "/v1/orders/\(orderId)/rider", token: riderToken,
        body: ["lat": position.lat, "lng": position.lng, "recordedAt": Timestamp.string(from: Date())],
        expect: [200])
      report.withLock { $0.fixesSent += 1 }
      let remaining = route.remaining(after: elapsed)
      if !arriving, remaining < options.arrivingWithin {
        try await call(
          "POST", "/v1/orders/\(orderId)/status", token: riderToken, body: ["status": "arriving"],
          expect: [200])
        arriving = true
      }
      if remaining <= 0 { break }
      try await pause(options.fixInterval)
      elapsed += options.fixInterval
    }
    try await pause(options.fixInterval)
    try await call(
      "POST", "/v1/orders/\(orderId)/status", token: riderToken, body: ["status": "delivered"], expect: [200])
    report.withLock { $0.ordersDelivered += 1 }
  }

  static let names = ["Ana", "Bo", "Chiara", "Deniz", "Emil", "Fatou", "Goran", "Hana", "Ines", "Jonas"]

  private func pause(_ seconds: TimeInterval) async throws {
    try await Task.sleep(for: .milliseconds(Int(seconds / max(options.speedup, 0.001) * 1000)))
  }

  private func token(_ subject: String, role: Principal.Role, hubs: [String] = []) -> String {
    let now = Date()
    return signer.sign(
      claims: TokenClaims(subject: subject, role: role, hubs: hubs, issuedAt: now, expiresAt: now + 6 * 3600))
  }

  /// One request; an answer outside `expect` is a failure naming the call and the answer.
  @discardableResult
  private func call(
    _ method: String, _ path: String, token: String, body: [String: Any]? = nil,
    headers: [String: String] = [:],
    expect: Set<Int>
  ) async throws -> Data {
    var request = URLRequest(url: options.baseURL.appendingPathComponent(path))
    request.httpMethod = method
    request.setValue("Bearer \(token)", forHTTPHeaderField: "Authorization")
    for (name, value) in headers { request.setValue(value, forHTTPHeaderField: name) }
    if let body {
      request.setValue("application/json", forHTTPHeaderField: "Content-Type")
      request.httpBody = try JSONSerialization.data(withJSONObject: body)
    }
    report.withLock { $0.requests += 1 }
    let (data, response) = try await session.data(for: request)
    let status = (response as? HTTPURLResponse)?.statusCode ?? 0
    guard expect.contains(status) else {
      throw Failure(
        description:
          "\(method) \(path) answered \(status): \(String(decoding: data.prefix(300), as: UTF8.self))")
    }
    return data
  }
}
