import GrocerCore
import Synchronization

/// Counts requests (`http_requests_total{route,method,status}`) and observes latency
/// (`http_request_duration_seconds{route,method}`), labelled by route template, `unmatched` when
/// no route matched.
///
/// Instruments are cached per label set, so the hot path does one dictionary lookup instead of
/// asking the registry (which renders label strings) each time.
public final class MetricsMiddleware: HTTPMiddleware {
  private struct CounterKey: Hashable {
    var route: String
    var method: String
    var status: Int
  }

  /// Both instruments of a (route, method, status), found with one lookup and handed out with
  /// one reference count.
  private final class Instruments: Sendable {
    let counter: Counter
    let histogram: Histogram

    init(counter: Counter, histogram: Histogram) {
      self.counter = counter
      self.histogram = histogram
    }
  }

  private struct Cache {
    /// Keeps the instruments alive; never emptied.
    var owned: [Instruments] = []
    var instruments: [CounterKey: Unretained<Instruments>] = [:]
  }

  private let registry: MetricsRegistry
  /// Read by every request, written once per new (route, method, status).
  private let cache = ReadMostly(Cache())

  public init(registry: MetricsRegistry) {
    self.registry = registry
  }

  public func after(_ request: HTTPRequest, _ response: inout HTTPResponse) {
    let elapsed = ContinuousClock.now - request.startedAt
    let seconds =
      Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
    let route = request.route ?? "unmatched"
    let method = Self.isKnown(request.method) ? request.method : "OTHER"
    instruments(route: route, method: method, status: response.status).with { found in
      found.counter.increment()
      found.histogram.observe(seconds)
    }
  }

  private static func isKnown(_ method: String) -> Bool {
    switch method {
    case "GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS": true
    default: false
    }
  }

  private func instruments(route: String, method: String, status: Int) -> Unretained<Instruments> {
    let counterKey = CounterKey(route: route, method: method, status: status)
    if let found = cache.read({ $0.instruments[counterKey] }) { return found }
    let counter = registry.counter(
      "http_requests_total", help: "HTTP requests answered, by route template, method and status.",
      labels: [("method", method), ("route", route), ("status", String(status))])
    let histogram = registry.histogram(
      "http_request_duration_seconds", help: "Time to answer HTTP requests, by route template.",
      labels: [("method", method), ("route", route)])
    let made = Instruments(counter: counter, histogram: histogram)
    return cache.write { cache in
      // Another thread may have made them meanwhile (the registry hands both the same ones).
      if let found = cache.instruments[counterKey] { return found }
      cache.owned.append(made)
      cache.instruments[counterKey] = Unretained(made)
      return Unretained(made)
    }
  }
}
