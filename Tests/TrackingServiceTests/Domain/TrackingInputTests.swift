import Foundation
import Testing

@testable import TrackingService

/// The form of a Live Activity token and of a rider fix, before any order is read.
@Suite struct TrackingInputTests {
  static let now = Date(timeIntervalSince1970: 1_790_000_000)

  @Test func aLiveActivityTokenIsEvenHexOf66To400DigitsStoredLowercase() throws {
    #expect(
      try TrackingInput.liveActivityToken(String(repeating: "AB", count: 33))
        == String(repeating: "ab", count: 33))
    #expect(try TrackingInput.liveActivityToken(String(repeating: "0f", count: 200)).count == 400)
    for bad in [
      String(repeating: "ab", count: 32), String(repeating: "ab", count: 201),
      String(repeating: "a", count: 67),
      String(repeating: "zz", count: 40), "",
    ] {
      #expect(throws: TrackingError.self, "\(bad)") { try TrackingInput.liveActivityToken(bad) }
    }
  }

  @Test func aFixMustBeOnTheGlobeAndNotFromTheFuture() throws {
    try TrackingInput.checkFix(lat: 52.5, lng: 13.4, recordedAt: Self.now + 30, now: Self.now, clockSkew: 30)
    try TrackingInput.checkFix(lat: -90, lng: 180, recordedAt: Self.now - 3600, now: Self.now, clockSkew: 0)
    #expect(
      throws: TrackingError(.invalid, "invalidCoordinates", "`lat` must be in −90…90 and `lng` in −180…180")
    ) {
      try TrackingInput.checkFix(lat: 91, lng: 0, recordedAt: Self.now, now: Self.now, clockSkew: 30)
    }
    #expect(throws: TrackingError.self) {
      try TrackingInput.checkFix(lat: .nan, lng: 0, recordedAt: Self.now, now: Self.now, clockSkew: 30)
    }
    #expect(
      throws: TrackingError(
        .invalid, "fixInTheFuture", "`recordedAt` is in the future; send the time the fix was taken")
    ) {
      try TrackingInput.checkFix(
        lat: 52.5, lng: 13.4, recordedAt: Self.now + 31, now: Self.now, clockSkew: 30)
    }
  }
}
