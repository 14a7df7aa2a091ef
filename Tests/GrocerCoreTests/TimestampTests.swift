import Foundation
import Testing

@testable import GrocerCore

@Suite struct TimestampTests {
  @Test func formatsUTCWithWholeSeconds() {
    #expect(Timestamp.string(from: Date(timeIntervalSince1970: 0)) == "1970-01-01T00:00:00Z")
    #expect(Timestamp.string(from: Date(timeIntervalSince1970: 1_792_521_720.7)) == "2026-10-20T18:42:00Z")
    #expect(Timestamp.string(from: Date(timeIntervalSince1970: 951_782_400)) == "2000-02-29T00:00:00Z")
  }

  @Test func parsesWhatItFormats() {
    let date = Date(timeIntervalSince1970: 1_792_521_720)
    #expect(Timestamp.date(from: Timestamp.string(from: date)) == date)
    #expect(Timestamp.date(from: "2026-10-20T20:42:00+02:00") == date)
    #expect(Timestamp.date(from: "yesterday") == nil)
  }
}
