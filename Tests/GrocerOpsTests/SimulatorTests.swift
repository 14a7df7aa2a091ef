import Foundation
import GrocerContracts
import GrocerCore
import GrocerRuntime
import Testing
import TrackingService

@testable import GrocerOps

@Suite struct SimulatorTests {
  @Test func aRouteRunsStraightToTheDoorAtItsSpeed() {
    let door = GeoPoint(lat: 52.52, lng: 13.405)
    let route = RiderRoute(towards: door, from: 1500, bearing: 1.0, speed: 5)
    #expect(abs(route.length - 1500) < 5)
    #expect(route.position(after: 0) == route.start)
    #expect(route.position(after: 10_000) == door)
    #expect(abs(route.remaining(after: 100) - (route.length - 500)) < 0.001)
    // Every step brings it closer.
    var last = route.length
    for second in stride(from: 5.0, through: 300, by: 5) {
      let left = ETAModel.distance(from: route.position(after: second), to: door)
      #expect(left <= last)
      last = left
    }
    #expect(last < 1)
  }

  @Test func theCommandLineIsCheckedAndDefaultsWork() throws {
    let settings = Settings(["GROCER_JWT_SECRET": "s", "GROCER_GATEWAY_PORT": "9999"])
    let defaults = try SimulatorCommand.parse([], settings: settings)
    #expect(defaults.baseURL.absoluteString == "http://127.0.0.1:9999")
    #expect(defaults.orders == 5)
    #expect(defaults.secret == "s")
    let custom = try SimulatorCommand.parse(
      ["--orders", "50", "--speedup", "20", "--hub", "h1", "--base-url", "http://10.0.0.1:8080"],
      settings: settings)
    #expect(custom.orders == 50)
    #expect(custom.speedup == 20)
    #expect(custom.hub == "h1")
    for bad in [
      ["--orders", "0"], ["--orders"], ["--speedup", "fast"], ["--base-url", "ftp://x"], ["--nope"],
    ] {
      #expect(throws: SimulatorCommand.UsageError.self, "\(bad)") {
        try SimulatorCommand.parse(bad, settings: settings)
      }
    }
  }
}
