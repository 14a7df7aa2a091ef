import Foundation
import GrocerAuth
import GrocerCore
import GrocerRuntime

#if canImport(FoundationNetworking)
  import FoundationNetworking
#endif

/// `grocer area set <hub> <file.geojson> [--priority N]` sets a hub's delivery area from a
/// GeoJSON file (a Polygon or MultiPolygon, or a Feature holding one); `grocer area which <lat>
/// <lng>` prints the hub that delivers to a point. Both go through the gateway, as staff for
/// the hub (a token signed with GROCER_JWT_SECRET), so the service's own checks apply.
public struct AreaCommand: Sendable, Hashable {
  public static let usage = """
    usage: grocer area set <hub> <file.geojson> [--priority N] [--base-url URL]
           grocer area which <lat> <lng> [--base-url URL]

    set    sets the hub's delivery area from a GeoJSON Polygon or MultiPolygon (or a Feature
           with one), at --priority (default 0; the higher wins where areas overlap)
    which  prints the hub whose area holds the point, or "outOfArea"
      --base-url  the gateway (default http://127.0.0.1:$GROCER_GATEWAY_PORT, port 8080)
    """

  public enum Action: Sendable, Hashable {
    case set(hub: String, file: String, priority: Int)
    case which(lat: Double, lng: Double)
  }

  public var action: Action
  public var baseURL: URL
  public var secret: String

  static func parse(_ arguments: [String], settings: Settings) throws(UsageError) -> AreaCommand {
    let parsed = try ParsedArguments(arguments, options: ["--priority", "--base-url"], usage: usage)
    let port = settings.int("GROCER_GATEWAY_PORT", default: 8080)
    var baseURL = URL(string: "http://127.0.0.1:\(port)")!
    if let text = parsed.options["--base-url"] {
      guard let url = URL(string: text), url.scheme == "http" || url.scheme == "https", url.host != nil else {
        throw UsageError("--base-url must be an http(s) URL, not \(text)", usage: usage)
      }
      baseURL = url
    }
    let secret = settings.string("GROCER_JWT_SECRET", default: Settings.localJWTSecret)
    switch parsed.positional.first {
    case "set":
      guard parsed.positional.count == 3 else {
        throw UsageError("area set needs a hub and a file", usage: usage)
      }
      var priority = 0
      if let text = parsed.options["--priority"] {
        guard let value = Int(text), abs(value) <= 1_000_000 else {
          throw UsageError("--priority needs a whole number, got \(text)", usage: usage)
        }
        priority = value
      }
      return AreaCommand(
        action: .set(hub: parsed.positional[1], file: parsed.positional[2], priority: priority),
        baseURL: baseURL,
        secret: secret)
    case "which":
      guard parsed.positional.count == 3, parsed.options["--priority"] == nil,
        let lat = Double(parsed.positional[1]), let lng = Double(parsed.positional[2])
      else { throw UsageError("area which needs a latitude and a longitude", usage: usage) }
      return AreaCommand(action: .which(lat: lat, lng: lng), baseURL: baseURL, secret: secret)
    default:
      throw UsageError("expected `grocer area set` or `grocer area which`", usage: usage)
    }
  }

  func run(console: Console) async throws {
    switch action {
    case .set(let hub, let file, let priority):
      guard let data = FileManager.default.contents(atPath: file) else {
        throw CommandFailure("cannot read \(file)")
      }
      guard var area = try? JSON.decode(JSONValue.self, from: data) else {
        throw CommandFailure("\(file) is not JSON")
      }
      // A Feature's geometry is the area.
      if case .object(let object) = area, object["type"] == .string("Feature"),
        let geometry = object["geometry"]
      {
        area = geometry
      }
      let body = JSONValue.object(["area": area, "priority": .number(Double(priority))])
      let now = Date()
      let token = HS256Signer(secret: secret).sign(
        claims: TokenClaims(
          subject: "grocer-area", role: .staff, hubs: [hub], issuedAt: now, expiresAt: now + 300))
      let (status, reply) = try await send(
        "PUT", "/v1/hubs/\(hub)/delivery-area", body: try JSON.encode(body), token: token)
      guard status == 200 else { throw CommandFailure("the gateway answered \(status): \(reply)") }
      console.out("\(hub)'s delivery area set (priority \(priority))")
    case .which(let lat, let lng):
      let (status, reply) = try await send(
        "GET", "/v1/delivery-area?lat=\(lat)&lng=\(lng)", body: nil, token: nil)
      guard status == 200, let answer = try? JSON.decode([String: String].self, from: Data(reply.utf8)) else {
        throw CommandFailure("the gateway answered \(status): \(reply)")
      }
      console.out(answer["hub"] ?? answer["status"] ?? reply)
    }
  }

  private func send(_ method: String, _ target: String, body: Data?, token: String?) async throws -> (
    Int, String
  ) {
    guard let url = URL(string: baseURL.absoluteString.trimmingCharacters(in: ["/"]) + target) else {
      throw CommandFailure("bad URL for \(target)")
    }
    var request = URLRequest(url: url)
    request.httpMethod = method
    if let token { request.setValue("Bearer \(token)", forHTTPHeaderField: "Authorization") }
    if let body {
      request.setValue("application/json", forHTTPHeaderField: "Content-Type")
      request.httpBody = body
    }
    do {
      let (data, response) = try await URLSession.shared.data(for: request)
      return ((response as? HTTPURLResponse)?.statusCode ?? 0, String(decoding: data, as: UTF8.self))
    } catch {
      throw CommandFailure("cannot reach the gateway at \(baseURL): \(error.localizedDescription)")
    }
  }
}
