import Testing

@testable import GrocerOps

/// The pieces of `grocer load push` that read the gateway: its push bodies and its `/metrics`.
@Suite struct PushLoadToolTests {
  @Test func aPushsTimestampIsReadFromItsBody() {
    let body = Array(#"{"aps":{"event":"update","timestamp": 1765000123,"content-state":{}}}"#.utf8)
    #expect(PushLoadTool.timestamp(in: body) == 1_765_000_123)
    #expect(PushLoadTool.timestamp(in: Array(#"{"aps":{"alert":"hi"}}"#.utf8)) == nil)
    #expect(PushLoadTool.timestamp(in: Array(#"{"timestamp":"x"}"#.utf8)) == nil)
  }

  @Test func metricsAreSummedOverTheSamplesWithTheGivenLabels() {
    let samples = MetricSamples(
      text: """
        # HELP pushes_total Pushes by type, priority and APNs result.
        # TYPE pushes_total counter
        pushes_total{type="liveactivity",priority="5",result="ok"} 90000
        pushes_total{type="alert",priority="10",result="ok"} 500
        pushes_total{type="alert",priority="10",result="BadDeviceToken"} 3
        events_consumed_total{queue="push-load-1"} 20500
        events_consumed_total{queue="push-load-10"} 7
        push_coalesced_total 12
        """)
    #expect(samples.sum("pushes_total") == 90503)
    #expect(samples.sum("pushes_total", [("result", "ok")]) == 90500)
    #expect(samples.sum("events_consumed_total", [("queue", "push-load-1")]) == 20500)
    #expect(samples.sum("push_coalesced_total") == 12)
    #expect(samples.sum("push_dropped_total") == 0)
    #expect(samples.byLabel("pushes_total", "result") == ["ok": 90500, "BadDeviceToken": 3])
  }
}
