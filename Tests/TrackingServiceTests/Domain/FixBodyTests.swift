import Foundation
import GrocerCore
import Testing

@testable import TrackingService

/// A rider fix's body read by hand gives what `StrictJSON` gives, or nothing (and then
/// `StrictJSON` reads it and explains what is wrong).
@Suite struct FixBodyTests {
  typealias FixBody = TrackingController.FixBody

  /// What a rider's app sends: these take the fast path.
  static let common = [
    #"{"lat":52.52,"lng":13.405,"recordedAt":"2026-12-07T01:00:00Z"}"#,
    #" { "recordedAt" : "2026-12-07T01:00:00Z" , "lng" : -13 , "lat" : 5.2e1 } "#,
    #"{"lat":0,"lng":-0.000001,"recordedAt":"2026-12-07T01:00:00.250+01:00"}"#,
  ]

  @Test(
    arguments: common + [
      #"{"lat":52.5,"lng":13.4,"recordedAt":"2026-12-07T01:00:00Z","speed":3}"#,
      #"{"lat":52.5,"lat":52.6,"lng":13.4,"recordedAt":"2026-12-07T01:00:00Z"}"#,
      #"{"lat":"52.5","lng":13.4,"recordedAt":"2026-12-07T01:00:00Z"}"#,
      #"{"lat":52.5,"lng":13.4}"#,
      #"{"lat":52.5,"lng":13.4,"recordedAt":"yesterday"}"#,
      #"{"lat":052.5,"lng":13.4,"recordedAt":"2026-12-07T01:00:00Z"}"#,
      #"{"lat":1e400,"lng":13.4,"recordedAt":"2026-12-07T01:00:00Z"}"#,
      #"{"lat":52.5,"lng":13.4,"recordedAt":"2026-12-07T01:00:00Z"} x"#,
      #"[]"#,
    ])
  func theFastReadingIsTheStrictReadingOrNothing(json: String) throws {
    let strict = try? StrictJSON.decode(FixBody.self, from: Data(json.utf8))
    let fast = FixBody.fast(Array(json.utf8))
    if let fast { #expect(fast == strict) }
    if Self.common.contains(json) {
      #expect(fast != nil)
      #expect(strict != nil)
    }
  }
}
