import Foundation
import GrocerFastPath
import GrocerRuntime
import Testing

@testable import GrocerCore

@Suite struct MetricsRegistryTests {
  @Test func rendersACounterWithHelpAndType() {
    let registry = MetricsRegistry()
    registry.counter("events_published_total", help: "Events confirmed by the broker.").increment(by: 3)
    #expect(
      registry.render()
        == "# HELP events_published_total Events confirmed by the broker.\n"
        + "# TYPE events_published_total counter\nevents_published_total 3\n")
  }

  @Test func returnsTheSameInstrumentForTheSameNameAndLabels() {
    let registry = MetricsRegistry()
    let first = registry.counter("requests_total", help: "h", labels: [("route", "/a"), ("status", "200")])
    let again = registry.counter("requests_total", help: "h", labels: [("route", "/a"), ("status", "200")])
    let other = registry.counter("requests_total", help: "h", labels: [("route", "/b"), ("status", "200")])
    #expect(first === again)
    #expect(first !== other)
    first.increment()
    again.increment()
    #expect(registry.render().contains("requests_total{route=\"/a\",status=\"200\"} 2\n"))
    #expect(registry.render().contains("requests_total{route=\"/b\",status=\"200\"} 0\n"))
  }

  @Test func rendersGaugesAsWholeOrFractionalNumbers() {
    let registry = MetricsRegistry()
    let backlog = registry.gauge("outbox_backlog", help: "Unsent events.")
    backlog.set(5)
    backlog.add(-2)
    #expect(registry.render().contains("outbox_backlog 3\n"))
    backlog.set(2.5)
    #expect(registry.render().contains("outbox_backlog 2.5\n"))
  }

  @Test func rendersHistogramBucketsCumulatively() {
    let registry = MetricsRegistry()
    let latency = registry.histogram(
      "request_seconds", help: "Latency.", labels: [("route", "/v1/hubs/{hub}/stock")], buckets: [0.1, 1])
    for value in [0.0625, 0.5, 0.5, 2] { latency.observe(value) }
    #expect(latency.count == 4)
    #expect(
      registry.render()
        == """
        # HELP request_seconds Latency.
        # TYPE request_seconds histogram
        request_seconds_bucket{route="/v1/hubs/{hub}/stock",le="0.1"} 1
        request_seconds_bucket{route="/v1/hubs/{hub}/stock",le="1"} 3
        request_seconds_bucket{route="/v1/hubs/{hub}/stock",le="+Inf"} 4
        request_seconds_sum{route="/v1/hubs/{hub}/stock"} 3.0625
        request_seconds_count{route="/v1/hubs/{hub}/stock"} 4

        """)
  }

  @Test func rendersAnUnlabelledHistogramWithOnlyLe() {
    let registry = MetricsRegistry()
    registry.histogram("h", help: "x", buckets: [0.5]).observe(0.25)
    let text = registry.render()
    #expect(text.contains("h_bucket{le=\"0.5\"} 1\n"))
    #expect(text.contains("h_bucket{le=\"+Inf\"} 1\n"))
    #expect(text.contains("h_sum 0.25\nh_count 1\n"))
  }

  @Test func escapesLabelValues() {
    let registry = MetricsRegistry()
    registry.counter("c", help: "x", labels: [("path", "a\"b\\c\nd")]).increment()
    #expect(registry.render().contains(#"c{path="a\"b\\c\nd"} 1"#))
  }

  @Test func sortsFamiliesAndRunsCollectorsBeforeRendering() {
    let registry = MetricsRegistry()
    let gauge = registry.gauge("zeta", help: "z")
    _ = registry.counter("alpha_total", help: "a")
    registry.onCollect { gauge.set(42) }
    let text = registry.render()
    #expect(text.contains("zeta 42\n"))
    #expect(text.hasPrefix("# HELP alpha_total a\n"))
  }

  @Test func observationsFromManyThreadsAreAllCounted() async {
    let registry = MetricsRegistry()
    let histogram = registry.histogram("h", help: "x", buckets: [0.5, 1])
    await withTaskGroup(of: Void.self) { group in
      for _ in 0..<8 {
        group.addTask {
          for index in 0..<1_000 { histogram.observe(index.isMultiple(of: 2) ? 0.25 : 2) }
        }
      }
    }
    #expect(histogram.count == 8_000)
    let text = registry.render()
    #expect(text.contains(#"h_bucket{le="0.5"} 4000"#))
    #expect(text.contains(#"h_bucket{le="1"} 4000"#))
    #expect(text.contains(#"h_bucket{le="+Inf"} 8000"#))
    #expect(text.contains("h_sum 9000.0"))
    #expect(text.contains("h_count 8000"))
  }

  /// Threads on every stripe, several on some: the counts and the sum are the totals of all.
  @Test func countsAndSumsKeptPerStripeAddUp() async {
    let registry = MetricsRegistry()
    let counter = registry.counter("c_total", help: "x")
    let histogram = registry.histogram("h", help: "x", buckets: [1])
    await withTaskGroup(of: Void.self) { group in
      for thread in 0..<(ThreadStripe.count + 3) {
        group.addTask {
          ThreadStripe.adopt(thread)
          for _ in 0..<500 {
            counter.increment(by: 2)
            histogram.observe(0.5)
          }
        }
      }
    }
    let total = (ThreadStripe.count + 3) * 500
    #expect(counter.value == 2 * total)
    #expect(histogram.count == total)
    let text = registry.render()
    #expect(text.contains("c_total \(2 * total)\n"))
    #expect(text.contains(#"h_bucket{le="1"} \#(total)"#))
    #expect(text.contains("h_sum \(Double(total) * 0.5)\n"))
  }

  @Test func countsAnObservationOnABucketBoundInThatBucket() {
    let registry = MetricsRegistry()
    registry.histogram("h", help: "x", buckets: [0.1, 1]).observe(0.1)
    #expect(registry.render().contains("h_bucket{le=\"0.1\"} 1\n"))
  }

  @Test func theSameLabelsInAnotherOrderAreTheSameSeries() {
    let registry = MetricsRegistry()
    let first = registry.counter("c", help: "x", labels: [("a", "1"), ("b", "2")])
    let second = registry.counter("c", help: "x", labels: [("b", "2"), ("a", "1")])
    first.increment()
    second.increment()
    #expect(first === second)
    #expect(registry.render() == "# HELP c x\n# TYPE c counter\nc{a=\"1\",b=\"2\"} 2\n")
  }
}

@Suite struct LoggerReservedKeysTests {
  @Test func metadataCannotOverrideTheLinesOwnFields() throws {
    let sink = LogSink.memory()
    Logger(label: "t", sink: sink).info("real message", ["msg": "forged", "level": "debug"])
    let line = try #require(sink.lines.first)
    let object = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: String])
    #expect(object["msg"] == "real message")
    #expect(object["level"] == "info")
    #expect(object["meta.msg"] == "forged")
  }
}
