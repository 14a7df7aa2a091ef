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

  private struct HistogramKey: Hashable {
    var route: String
    var method: String
  }

  private struct Cache {
    var counters: [CounterKey: Counter] = [:]
    var histograms: [HistogramKey: Histogram] = [:]
  }

  private let registry: MetricsRegistry
  private let cache = Mutex(Cache())

  public init(registry: MetricsRegistry) {
    self.registry = registry
  }

  public func after(_ request: HTTPRequest, _ response: inout HTTPResponse) {
    let elapsed = ContinuousClock.now - request.startedAt
    let seconds =
      Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
    let route = request.route ?? "unmatched"
    let method = Self.knownMethods.contains(request.method) ? request.method : "OTHER"
    let (counter, histogram) = instruments(route: route, method: method, status: response.status)
    counter.increment()
    histogram.observe(seconds)
  }

  private static let knownMethods: Set<String> = [
    "GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS",
  ]

  private func instruments(route: String, method: String, status: Int) -> (Counter, Histogram) {
    let counterKey = CounterKey(route: route, method: method, status: status)
    let histogramKey = HistogramKey(route: route, method: method)
    if let found = cache.withLock({ cache -> (Counter, Histogram)? in
      guard let counter = cache.counters[counterKey], let histogram = cache.histograms[histogramKey]
      else { return nil }
      return (counter, histogram)
    }) {
      return found
    }
    let counter = registry.counter(
      "http_requests_total", help: "HTTP requests answered, by route template, method and status.",
      labels: [("method", method), ("route", route), ("status", String(status))])
    let histogram = registry.histogram(
      "http_request_duration_seconds", help: "Time to answer HTTP requests, by route template.",
      labels: [("method", method), ("route", route)])
    cache.withLock { cache in
      cache.counters[counterKey] = counter
      cache.histograms[histogramKey] = histogram
    }
    return (counter, histogram)
  }
}
