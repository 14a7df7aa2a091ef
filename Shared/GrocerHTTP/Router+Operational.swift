import GrocerCore
import GrocerRuntime

extension Router {
  /// Adds `GET /health/live` (always 200), `GET /health/ready` (200, or 503 with `Retry-After`
  /// naming the checks that failed) and `GET /metrics` (Prometheus text).
  ///
  /// `readiness` is called for every probe: it should read cached state (a connection flag), not
  /// perform I/O. `brokerNodes` (the broker node of each connection, by its name) is shown in
  /// both answers as `brokerNodes`.
  public mutating func addOperationalRoutes(
    registry: MetricsRegistry, brokerNodes: @escaping @Sendable () -> [String: String] = { [:] },
    readiness: @escaping @Sendable () -> [String: Bool]
  ) {
    get(
      "/health/live",
      { _ in .json(bytes: Array(#"{"status":"live"}"#.utf8)) })
    get(
      "/health/ready",
      { _ in
        let checks = readiness()
        let failed = checks.filter { !$0.value }.keys.sorted()
        let members = checks.mapValues { JSONValue.string($0 ? "up" : "down") }
        let nodes = JSONValue.object(brokerNodes().mapValues(JSONValue.string))
        guard failed.isEmpty else {
          throw HTTPError.serviceUnavailable(
            retryAfter: 5, detail: "not ready: \(failed.joined(separator: ", "))",
            extra: ["checks": .object(members), "brokerNodes": nodes])
        }
        return try .json(
          value: ["status": JSONValue.string("ready"), "checks": .object(members), "brokerNodes": nodes])
      })
    get(
      "/metrics",
      { _ in .text(registry.render(), contentType: "text/plain; version=0.0.4; charset=utf-8") })
  }
}
