import GrocerCore

// What goes into every Live Activity push, written and read by hand (one per push on the hot
// path, and an activity's shown content is kept as this JSON), as `JSON.encode` writes it: keys
// sorted, absent parts left out. `PayloadJSONTests` compares with the encoder.

extension LiveActivityContent: JSONReadable {
  func write(into out: inout JSONBytes) {
    out.beginObject()
    if let etaEarliest {
      out.key("etaEarliest")
      out.int(etaEarliest)
    }
    if let etaLatest {
      out.key("etaLatest")
      out.int(etaLatest)
    }
    if let riderFirstName {
      out.key("riderFirstName")
      out.string(riderFirstName)
    }
    out.key("status")
    out.string(status)
    out.endObject()
  }

  var jsonBytes: [UInt8] {
    var out = JSONBytes(capacity: 128)
    write(into: &out)
    return out.bytes
  }

  public init(reading reader: inout JSONReader) throws {
    var status: String?
    var etaEarliest: Int?
    var etaLatest: Int?
    var riderFirstName: String?
    try reader.readObject { reader, key in
      switch key {
      case "status": status = try reader.readString()
      case "etaEarliest": etaEarliest = reader.readNull() ? nil : try reader.readInt()
      case "etaLatest": etaLatest = reader.readNull() ? nil : try reader.readInt()
      case "riderFirstName": riderFirstName = reader.readNull() ? nil : try reader.readString()
      default: try reader.skipValue()
      }
    }
    guard let status else { throw JSONReader.Failure("a Live Activity's content needs a status") }
    self.init(status: status, etaEarliest: etaEarliest, etaLatest: etaLatest, riderFirstName: riderFirstName)
  }
}

extension AlertText {
  func write(into out: inout JSONBytes) {
    out.beginObject()
    out.key("body")
    out.string(body)
    out.key("title")
    out.string(title)
    out.endObject()
  }
}

extension PushPayloads.StartAttributes {
  func write(into out: inout JSONBytes) {
    out.beginObject()
    out.key("hub")
    out.string(hub)
    out.key("orderId")
    out.string(orderId)
    out.endObject()
  }
}
