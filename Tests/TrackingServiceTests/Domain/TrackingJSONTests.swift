import Foundation
import GrocerContracts
import GrocerCore
import Testing

/// The hand-written tracking JSON is byte for byte what `JSON.encoder()` writes.
@Suite struct TrackingJSONTests {
  static let at = Date(timeIntervalSince1970: 1_796_000_000.75)

  static let snapshots: [TrackingSnapshot] = [
    TrackingSnapshot(
      orderId: "o-1", version: 1, status: .placed, problem: nil, eta: nil, rider: nil, destination: nil,
      generatedAt: at),
    TrackingSnapshot(
      orderId: "o-2", version: 42, status: .onTheWay, problem: nil,
      eta: ETARange(earliest: at + 600, latest: at + 900),
      rider: RiderView(firstName: "Ana", lat: 52.5001, lng: 13.0, recordedAt: at - 3),
      destination: GeoPoint(lat: 52.53, lng: -13.41), generatedAt: at),
    TrackingSnapshot(
      orderId: "o-\"3\"", version: 7, status: .problem, problem: "Rider \\ delayed\n🚲", eta: nil,
      rider: RiderView(firstName: "Zoë", lat: -0.000001, lng: 179.999999, recordedAt: at),
      destination: GeoPoint(lat: 0, lng: 0), generatedAt: at),
  ]

  @Test(arguments: snapshots)
  func aSnapshotIsWrittenLikeTheEncoder(snapshot: TrackingSnapshot) throws {
    #expect(text(snapshot.jsonBytes) == text(try JSON.encode(snapshot)))
    // Reads back as what the encoder's text reads back as (times keep whole seconds in both).
    #expect(
      try JSON.decode(TrackingSnapshot.self, from: Data(snapshot.jsonBytes))
        == JSON.decode(TrackingSnapshot.self, from: JSON.encode(snapshot)))
  }

  @Test(arguments: snapshots)
  func anUpdateIsWrittenLikeTheEncoder(snapshot: TrackingSnapshot) throws {
    for changed in [[], [TrackingChange.stage, .eta], [.rider]] {
      let update = TrackingUpdated(
        userId: "u-1", hub: "h/1", snapshot: snapshot, changed: changed, previousStatus: .picking)
      #expect(text(update.jsonBytes) == text(try JSON.encode(update)))
    }
  }

  private func text(_ bytes: some Sequence<UInt8>) -> String { String(decoding: Array(bytes), as: UTF8.self) }
}
