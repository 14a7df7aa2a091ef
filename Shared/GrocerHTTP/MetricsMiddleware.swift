import GrocerCore
import GrocerFastPath
import GrocerRuntime
import Synchronization

/// Counts requests (`http_requests_total{route,method,status}`) and observes latency
/// (`http_request_duration_seconds{route,method}`), labelled by route template, `unmatched` when
/// no route matched.
///
/// Instruments are cached per label set in a table read without a lock or a hash: indexed by the
/// router's route index, then a short list of (method, status). The table is replaced whole when
/// a label set is first seen (rare: routes × methods × statuses), and every table published is
/// kept, so a reader never holds one that is freed.
public final class MetricsMiddleware: HTTPMiddleware {
  /// Both instruments of a (route, method, status), found with one lookup.
  private final class Instruments: Sendable {
    let counter: Counter
    let histogram: Histogram

    init(counter: Counter, histogram: Histogram) {
      self.counter = counter
      self.histogram = histogram
    }
  }

  private struct Slot: Sendable {
    /// Checked too: a middleware shared by two routers sees the same index for two routes.
    let route: String
    let method: String
    let status: Int
    let instruments: Unretained<Instruments>
  }

  /// Slots by route index + 1 (0: unmatched).
  private final class Table: Sendable {
    let routes: [[Slot]]

    init(routes: [[Slot]]) { self.routes = routes }

    func find(index: Int, route: String, method: String, status: Int) -> Unretained<Instruments>? {
      guard index >= 0, index < routes.count else { return nil }
      for slot in routes[index] where slot.status == status && slot.method == method && slot.route == route {
        return slot.instruments
      }
      return nil
    }
  }

  private struct Owned {
    var instruments: [Instruments] = []
    var tables: [Table]
  }

  private let registry: MetricsRegistry
  /// The current table's address (an unretained `Table` kept alive by `owned`).
  private let current: Atomic<Int>
  /// Everything made, never emptied; also serialises the writers.
  private let owned: Mutex<Owned>

  public init(registry: MetricsRegistry) {
    self.registry = registry
    let empty = Table(routes: [])
    current = Atomic(Int(bitPattern: Unmanaged.passUnretained(empty).toOpaque()))
    owned = Mutex(Owned(tables: [empty]))
  }

  public func after(_ request: HTTPRequest, _ response: inout HTTPResponse) {
    let seconds = request.startedAt.secondsElapsed
    let route = request.route ?? "unmatched"
    let method = Self.isKnown(request.method) ? request.method : "OTHER"
    instruments(index: request.routeIndex + 1, route: route, method: method, status: response.status).with {
      found in
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

  private func instruments(index: Int, route: String, method: String, status: Int) -> Unretained<Instruments>
  {
    let found = Self.table(at: current.load(ordering: .acquiring))._withUnsafeGuaranteedRef {
      $0.find(index: index, route: route, method: method, status: status)
    }
    if let found { return found }
    return owned.withLock { owned in
      // Another thread may have added it meanwhile.
      let table = Self.table(at: current.load(ordering: .acquiring)).takeUnretainedValue()
      if let found = table.find(index: index, route: route, method: method, status: status) { return found }
      // The registry hands out the same instruments for the same labels.
      let made = Instruments(
        counter: registry.counter(
          "http_requests_total", help: "HTTP requests answered, by route template, method and status.",
          labels: [("method", method), ("route", route), ("status", String(status))]),
        histogram: registry.histogram(
          "http_request_duration_seconds", help: "Time to answer HTTP requests, by route template.",
          labels: [("method", method), ("route", route)]))
      owned.instruments.append(made)
      var routes = table.routes
      if routes.count <= index {
        routes.append(contentsOf: repeatElement([], count: index + 1 - routes.count))
      }
      routes[index].append(Slot(route: route, method: method, status: status, instruments: Unretained(made)))
      let next = Table(routes: routes)
      owned.tables.append(next)
      current.store(Int(bitPattern: Unmanaged.passUnretained(next).toOpaque()), ordering: .releasing)
      return Unretained(made)
    }
  }

  private static func table(at address: Int) -> Unmanaged<Table> {
    Unmanaged.fromOpaque(UnsafeRawPointer(bitPattern: address)!)
  }
}
