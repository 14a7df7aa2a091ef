import Foundation
import GrocerContracts
import TrackingService

/// A simulated rider's way to the door: a straight line from `start` to `destination` at
/// `speed` metres per second (pure, so the simulator's movement is tested without I/O).
public struct RiderRoute: Sendable, Hashable {
  public var start: GeoPoint
  public var destination: GeoPoint
  public var speed: Double

  public init(start: GeoPoint, destination: GeoPoint, speed: Double = 4.5) {
    self.start = start
    self.destination = destination
    self.speed = speed
  }

  /// A route starting `metres` from `destination`, in the direction `bearing` (radians, 0 =
  /// north, clockwise).
  public init(towards destination: GeoPoint, from metres: Double, bearing: Double, speed: Double = 4.5) {
    let metresPerDegreeLat = 111_195.0
    let metresPerDegreeLng = metresPerDegreeLat * cos(destination.lat * .pi / 180)
    let start = GeoPoint(
      lat: destination.lat + metres * cos(bearing) / metresPerDegreeLat,
      lng: destination.lng + metres * sin(bearing) / metresPerDegreeLng)
    self.init(start: start, destination: destination, speed: speed)
  }

  public var length: Double { ETAModel.distance(from: start, to: destination) }

  /// Where the rider is `elapsed` seconds after leaving (at the door once the route is done).
  public func position(after elapsed: TimeInterval) -> GeoPoint {
    let length = self.length
    guard length > 0 else { return destination }
    let fraction = min(1, max(0, elapsed * speed / length))
    return GeoPoint(
      lat: start.lat + (destination.lat - start.lat) * fraction,
      lng: start.lng + (destination.lng - start.lng) * fraction)
  }

  /// Metres still to go after `elapsed` seconds.
  public func remaining(after elapsed: TimeInterval) -> Double {
    max(0, length - elapsed * speed)
  }
}
