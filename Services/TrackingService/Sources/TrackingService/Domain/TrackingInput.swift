import Foundation
import GrocerContracts

/// What TrackingService accepts from the app and the riders before it looks at an order: a Live
/// Activity push token's form, and a rider fix's coordinates and time.
public enum TrackingInput {
  /// Hex digits, an even number of them, 66…400: a Live Activity push token is longer than a
  /// device token's 64 (NotifyGateway's APNs rules use the same range).
  public static let tokenLengths = 66...400

  /// `raw` as the token is stored (lowercase), or the refusal.
  public static func liveActivityToken(_ raw: String) throws(TrackingError) -> String {
    let token = raw.lowercased()
    guard tokenLengths.contains(token.utf8.count), token.utf8.count.isMultiple(of: 2),
      token.utf8.allSatisfy({ (0x30...0x39).contains($0) || (0x61...0x66).contains($0) })
    else {
      throw TrackingError(
        .invalid, "invalidToken", "`token` must be the Live Activity push token in hex (66–400 digits)")
    }
    return token
  }

  /// Refuses a fix off the globe, or taken later than `now` plus `clockSkew` (clocks differ a
  /// little, but a fix from the future would hold back every real one).
  public static func checkFix(
    lat: Double, lng: Double, recordedAt: Date, now: Date, clockSkew: TimeInterval
  ) throws(TrackingError) {
    guard GeoPoint(lat: lat, lng: lng).isValid else {
      throw TrackingError(.invalid, "invalidCoordinates", "`lat` must be in −90…90 and `lng` in −180…180")
    }
    guard recordedAt <= now + clockSkew else {
      throw TrackingError(
        .invalid, "fixInTheFuture", "`recordedAt` is in the future; send the time the fix was taken")
    }
  }
}
