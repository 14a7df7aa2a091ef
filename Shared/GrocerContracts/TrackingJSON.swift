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

// MARK: - Read by hand (every tracking.updated at NotifyGateway, and its pending update again)

extension TrackingSnapshot: JSONReadable {
  public init(reading reader: inout JSONReader) throws {
    var orderId: String?
    var version: Int64?
    var status: TrackingStatus?
    var problem: String?
    var eta: ETARange?
    var rider: RiderView?
    var destination: GeoPoint?
    var generatedAt: Date?
    var liveActivity: LiveActivityView?
    var notice: HubNoticeView?
    try reader.readObject { reader, key in
      switch key {
      case "orderId": orderId = try reader.readString()
      case "version": version = try reader.readInt64()
      case "status": status = try TrackingStatus.read(&reader)
      case "problem": problem = reader.readNull() ? nil : try reader.readString()
      case "eta": eta = reader.readNull() ? nil : try ETARange(reading: &reader)
      case "rider": rider = reader.readNull() ? nil : try RiderView(reading: &reader)
      case "destination": destination = reader.readNull() ? nil : try GeoPoint(reading: &reader)
      case "generatedAt": generatedAt = try reader.readDate()
      case "liveActivity": liveActivity = reader.readNull() ? nil : try LiveActivityView(reading: &reader)
      case "notice": notice = reader.readNull() ? nil : try HubNoticeView(reading: &reader)
      default: try reader.skipValue()
      }
    }
    guard let orderId, let version, let status, let generatedAt else {
      throw JSONReader.Failure("a tracking snapshot needs orderId, version, status and generatedAt")
    }
    self.init(
      orderId: orderId, version: version, status: status, problem: problem, eta: eta, rider: rider,
      destination: destination, generatedAt: generatedAt, liveActivity: liveActivity)
    self.notice = notice
  }
}

extension TrackingUpdated: JSONReadable {
  public init(reading reader: inout JSONReader) throws {
    var userId: String?
    var hub: HubID?
    var snapshot: TrackingSnapshot?
    var changed: [TrackingChange]?
    var previousStatus: TrackingStatus?
    try reader.readObject { reader, key in
      switch key {
      case "userId": userId = try reader.readString()
      case "hub": hub = try reader.readString()
      case "snapshot": snapshot = try TrackingSnapshot(reading: &reader)
      case "changed":
        var read: [TrackingChange] = []
        try reader.readArray { reader in
          guard let change = TrackingChange(rawValue: try reader.readString()) else {
            throw JSONReader.Failure("unknown change")
          }
          read.append(change)
        }
        changed = read
      case "previousStatus": previousStatus = try TrackingStatus.read(&reader)
      default: try reader.skipValue()
      }
    }
    guard let userId, let hub, let snapshot, let changed, let previousStatus else {
      throw JSONReader.Failure("tracking.updated needs userId, hub, snapshot, changed and previousStatus")
    }
    self.init(userId: userId, hub: hub, snapshot: snapshot, changed: changed, previousStatus: previousStatus)
  }
}

extension TrackingStatus {
  fileprivate static func read(_ reader: inout JSONReader) throws -> TrackingStatus {
    guard let status = TrackingStatus(rawValue: try reader.readString()) else {
      throw JSONReader.Failure("unknown tracking status")
    }
    return status
  }
}

extension ETARange: JSONReadable {
  public init(reading reader: inout JSONReader) throws {
    var earliest: Date?
    var latest: Date?
    try reader.readObject { reader, key in
      switch key {
      case "earliest": earliest = try reader.readDate()
      case "latest": latest = try reader.readDate()
      default: try reader.skipValue()
      }
    }
    guard let earliest, let latest else { throw JSONReader.Failure("an ETA needs earliest and latest") }
    self.init(earliest: earliest, latest: latest)
  }
}

extension RiderView: JSONReadable {
  public init(reading reader: inout JSONReader) throws {
    var firstName: String?
    var lat: Double?
    var lng: Double?
    var recordedAt: Date?
    try reader.readObject { reader, key in
      switch key {
      case "firstName": firstName = try reader.readString()
      case "lat": lat = try reader.readDouble()
      case "lng": lng = try reader.readDouble()
      case "recordedAt": recordedAt = try reader.readDate()
      default: try reader.skipValue()
      }
    }
    guard let firstName, let lat, let lng, let recordedAt else {
      throw JSONReader.Failure("a rider needs firstName, lat, lng and recordedAt")
    }
    self.init(firstName: firstName, lat: lat, lng: lng, recordedAt: recordedAt)
  }
}

extension LiveActivityView: JSONReadable {
  public init(reading reader: inout JSONReader) throws {
    var state: State?
    var lastPushAt: Date?
    try reader.readObject { reader, key in
      switch key {
      case "state": state = State(rawValue: try reader.readString())
      case "lastPushAt": lastPushAt = reader.readNull() ? nil : try reader.readDate()
      default: try reader.skipValue()
      }
    }
    guard let state else { throw JSONReader.Failure("liveActivity needs a known state") }
    self.init(state: state, lastPushAt: lastPushAt)
  }
}

extension HubNoticeView: JSONReadable {
  public init(reading reader: inout JSONReader) throws {
    var title: String?
    var body: String?
    var postedAt: Date?
    var expiresAt: Date?
    try reader.readObject { reader, key in
      switch key {
      case "title": title = try reader.readString()
      case "body": body = try reader.readString()
      case "postedAt": postedAt = try reader.readDate()
      case "expiresAt": expiresAt = try reader.readDate()
      default: try reader.skipValue()
      }
    }
    guard let title, let body, let postedAt, let expiresAt else {
      throw JSONReader.Failure("a notice needs title, body, postedAt and expiresAt")
    }
    self.init(title: title, body: body, postedAt: postedAt, expiresAt: expiresAt)
  }
}
