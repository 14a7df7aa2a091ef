import Foundation
import GrocerCore
import GrocerFastPath
import Synchronization

/// Prometheus metrics for one process, rendered in the text exposition format by `/metrics`.
///
/// Asking for the same name and labels twice returns the same instrument, so callers on a hot
/// path should keep the instrument they got rather than ask each time.
public final class MetricsRegistry: Sendable {
  private enum Kind: String { case counter, gauge, histogram }

  private struct Family {
    var kind: Kind
    var help: String
    var members: [String: AnyObject & Sendable]  // rendered labels → instrument
  }

  private let families = Mutex<[String: Family]>([:])
  private let collectors = Mutex<[@Sendable () -> Void]>([])

  public init() {}

  public func counter(_ name: String, help: String, labels: [(String, String)] = []) -> Counter {
    instrument(name, .counter, help, labels) { Counter() }
  }

  public func gauge(_ name: String, help: String, labels: [(String, String)] = []) -> Gauge {
    instrument(name, .gauge, help, labels) { Gauge() }
  }

  public func histogram(
    _ name: String, help: String, labels: [(String, String)] = [],
    buckets: [Double] = Histogram.latencyBuckets
  ) -> Histogram {
    instrument(name, .histogram, help, labels) { Histogram(buckets: buckets) }
  }

  /// Runs `collect` before every render, to refresh gauges read from elsewhere (an outbox backlog).
  public func onCollect(_ collect: @escaping @Sendable () -> Void) {
    collectors.withLock { $0.append(collect) }
  }

  private func instrument<T: AnyObject & Sendable>(
    _ name: String, _ kind: Kind, _ help: String, _ labels: [(String, String)], make: () -> T
  ) -> T {
    let key = Self.render(labels)
    return families.withLock { families in
      var family = families[name] ?? Family(kind: kind, help: help, members: [:])
      precondition(family.kind == kind, "metric \(name) registered as \(family.kind) and \(kind)")
      if let existing = family.members[key] as? T { return existing }
      let created = make()
      family.members[key] = created
      families[name] = family
      return created
    }
  }

  /// The whole registry in Prometheus text format.
  public func render() -> String {
    for collect in collectors.withLock({ $0 }) { collect() }
    let snapshot = families.withLock { $0 }
    var out = ""
    for name in snapshot.keys.sorted() {
      let family = snapshot[name]!
      out += "# HELP \(name) \(family.help)\n# TYPE \(name) \(family.kind.rawValue)\n"
      for labels in family.members.keys.sorted() {
        switch family.members[labels] {
        case let counter as Counter:
          out += "\(name)\(labels) \(counter.value)\n"
        case let gauge as Gauge:
          out += "\(name)\(labels) \(Self.number(gauge.value))\n"
        case let histogram as Histogram:
          out += histogram.render(name: name, labels: labels)
        default: break
        }
      }
    }
    return out
  }

  static func render(_ labels: [(String, String)]) -> String {
    guard !labels.isEmpty else { return "" }
    // Sorted by name, so the same labels given in another order are the same series.
    let body = labels.sorted { $0.0 < $1.0 }.map { key, value in
      let escaped = value.replacingOccurrences(of: "\\", with: "\\\\")
        .replacingOccurrences(of: "\"", with: "\\\"").replacingOccurrences(of: "\n", with: "\\n")
      return "\(key)=\"\(escaped)\""
    }
    return "{" + body.joined(separator: ",") + "}"
  }

  static func number(_ value: Double) -> String {
    if value.rounded() == value, abs(value) < 1e15 { return String(Int64(value)) }
    return String(value)
  }
}

/// A value that only goes up. Kept per `ThreadStripe`: every HTTP request counts one, from
/// every transport thread.
public final class Counter: Sendable {
  @usableFromInline let storage = StripedWords()
  init() {}
  /// Inlinable: the HTTP hot path counts every request, and a call into this module from
  /// another takes a reference count on the counter first.
  @inlinable
  public func increment(by amount: Int = 1) { storage.add(amount) }
  public var value: Int { storage.total() }
}

/// A value that goes up and down.
public final class Gauge: Sendable {
  private let storage = Mutex<Double>(0)
  init() {}
  public func set(_ value: Double) { storage.withLock { $0 = value } }
  public func add(_ delta: Double) { storage.withLock { $0 += delta } }
  public var value: Double { storage.withLock { $0 } }
}

/// Observations counted into cumulative buckets (seconds, for latencies).
///
/// Lock-free (atomics only): every HTTP request observes one, from several threads at once, and
/// a lock here made them queue behind a thread preempted while holding it (measured: a fifth of
/// the stock lookup's time in the lock with 8 HTTP threads on 2 cores). Kept per `ThreadStripe`,
/// so threads on different cores do not pass the counts' cache lines back and forth.
public final class Histogram: @unchecked Sendable {
  public static let latencyBuckets: [Double] = [
    0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5,
  ]

  @usableFromInline let buckets: [Double]
  /// Per stripe: one count per bucket (not cumulative), the count of all observations, then the
  /// sum's bit pattern (a `Double`, updated by compare-and-exchange).
  @usableFromInline let storage: StripedWords

  init(buckets: [Double]) {
    self.buckets = buckets
    storage = StripedWords(perStripe: buckets.count + 2)
  }

  /// A sum kept in an `Int` word as the `Double`'s bit pattern.
  @usableFromInline static func bits(_ value: Double) -> Int { Int(Int64(bitPattern: value.bitPattern)) }
  @usableFromInline static func double(_ bits: Int) -> Double {
    Double(bitPattern: UInt64(bitPattern: Int64(bits)))
  }

  /// Inlinable, as `Counter.increment` is.
  @inlinable
  public func observe(_ value: Double) {
    let words = storage.words(ThreadStripe.current)
    if let index = buckets.firstIndex(where: { value <= $0 }) {
      words[index].add(1, ordering: .relaxed)
    }
    let sum = words + buckets.count + 1
    var old = sum.pointee.load(ordering: .relaxed)
    while true {
      let (exchanged, original) = sum.pointee.weakCompareExchange(
        expected: old, desired: Self.bits(Self.double(old) + value), ordering: .relaxed)
      if exchanged { break }
      old = original
    }
    words[buckets.count].add(1, ordering: .relaxed)
  }

  public var count: Int { storage.total(at: buckets.count) }

  /// The per-bucket counts, the sum and the count, read one by one (an observation that lands
  /// meanwhile may show in some and not others; the total is read last and kept ≥ the buckets').
  private var snapshot: (counts: [Int], sum: Double, count: Int) {
    let perBucket = (0..<buckets.count).map { storage.total(at: $0) }
    let sum = (0..<ThreadStripe.count).reduce(0.0) {
      $0 + Self.double(storage.words($1)[buckets.count + 1].load(ordering: .relaxed))
    }
    return (perBucket, sum, max(count, perBucket.reduce(0, +)))
  }

  func render(name: String, labels: String) -> String {
    let snapshot = self.snapshot
    let inner = labels.isEmpty ? "" : String(labels.dropFirst().dropLast()) + ","
    var out = ""
    var cumulative = 0
    for (bound, count) in zip(buckets, snapshot.counts) {
      cumulative += count
      out += "\(name)_bucket{\(inner)le=\"\(MetricsRegistry.number(bound))\"} \(cumulative)\n"
    }
    out += "\(name)_bucket{\(inner)le=\"+Inf\"} \(snapshot.count)\n"
    out += "\(name)_sum\(labels) \(snapshot.sum)\n\(name)_count\(labels) \(snapshot.count)\n"
    return out
  }
}
