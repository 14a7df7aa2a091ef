import Foundation
import GrocerCore

/// Tracking written by hand, byte for byte as `JSON.encoder()` writes it (tests compare): a
/// tracking snapshot is encoded for every rider fix at TrackingService and for every update at
/// NotifyGateway (what Codable would cost: Benchmarks/codecs).
extension TrackingSnapshot {
  /// The snapshot's JSON text.
  public var jsonBytes: [UInt8] {
    var out = JSONBytes(capacity: 320)
    write(into: &out)
    return out.bytes
  }

  /// Writes the snapshot as one JSON value (keys sorted, absent parts as `null`, except
  /// `liveActivity` and `notice`, left out when absent as in events).
  public func write(into out: inout JSONBytes) {
    out.beginObject()
    out.key("destination")
    if let destination { destination.write(into: &out) } else { out.null() }
    out.key("eta")
    if let eta {
      out.beginObject()
      out.key("earliest")
      out.date(eta.earliest)
      out.key("latest")
      out.date(eta.latest)
      out.endObject()
    } else {
      out.null()
    }
    out.key("generatedAt")
    out.date(generatedAt)
    if let liveActivity {
      out.key("liveActivity")
      out.beginObject()
      out.key("lastPushAt")
      if let at = liveActivity.lastPushAt { out.date(at) } else { out.null() }
      out.key("state")
      out.string(liveActivity.state.rawValue)
      out.endObject()
    }
    if let notice {
      out.key("notice")
      out.beginObject()
      out.key("body")
      out.string(notice.body)
      out.key("expiresAt")
      out.date(notice.expiresAt)
      out.key("postedAt")
      out.date(notice.postedAt)
      out.key("title")
      out.string(notice.title)
      out.endObject()
    }
    out.key("orderId")
    out.string(orderId)
    out.key("problem")
    if let problem { out.string(problem) } else { out.null() }
    out.key("rider")
    if let rider {
      out.beginObject()
      out.key("firstName")
      out.string(rider.firstName)
      out.key("lat")
      out.double(rider.lat)
      out.key("lng")
      out.double(rider.lng)
      out.key("recordedAt")
      out.date(rider.recordedAt)
      out.endObject()
    } else {
      out.null()
    }
    out.key("status")
    out.string(status.rawValue)
    out.key("version")
    out.int(version)
    out.endObject()
  }
}

extension GeoPoint: JSONReadable {
  /// `{lat, lng}`.
  public func write(into out: inout JSONBytes) {
    out.beginObject()
    out.key("lat")
    out.double(lat)
    out.key("lng")
    out.double(lng)
    out.endObject()
  }

  public init(reading reader: inout JSONReader) throws {
    var lat: Double?
    var lng: Double?
    try reader.readObject { reader, key in
      switch key {
      case "lat": lat = try reader.readDouble()
      case "lng": lng = try reader.readDouble()
      default: try reader.skipValue()
      }
    }
    guard let lat, let lng else { throw JSONReader.Failure("a point needs lat and lng") }
    self.init(lat: lat, lng: lng)
  }
}

extension TrackingUpdated {
  /// The payload's JSON text (for `EventEnvelope.message(…payloadJSON:)`).
  public var jsonBytes: [UInt8] {
    var out = JSONBytes(capacity: 400)
    out.beginObject()
    out.key("changed")
    out.beginArray()
    for change in changed { out.string(change.rawValue) }
    out.endArray()
    out.key("hub")
    out.string(hub)
    out.key("previousStatus")
    out.string(previousStatus.rawValue)
    out.key("snapshot")
    snapshot.write(into: &out)
    out.key("userId")
    out.string(userId)
    out.endObject()
    return out.bytes
  }
}
