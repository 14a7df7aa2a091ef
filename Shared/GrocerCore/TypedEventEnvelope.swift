import Foundation

/// An event read with its payload's type known up front: the envelope's fields and `data`
/// decoded as `Payload` in one pass.
///
/// `EventEnvelope` decodes `data` into a `JSONValue` tree and `payload(as:)` then encodes and
/// decodes that tree again, which on a consumer's hot path is most of the cost of reading an
/// event. A consumer that knows the type from the routing key reads the body with this instead.
public struct TypedEventEnvelope<Payload: Decodable & Sendable>: Decodable, Sendable {
  public var id: String
  public var type: String
  public var occurredAt: Date
  public var source: String
  public var correlationId: String?
  public var subject: String
  public var sequence: Int64
  public var payload: Payload

  private enum CodingKeys: String, CodingKey {
    case id, type, occurredAt, source, correlationId, subject, sequence
    case payload = "data"
  }

  /// Reads `body`, an event of `type` (a body that names another type is refused: the routing key
  /// and the envelope disagree).
  public static func decode(_ body: Data, type: String) throws -> TypedEventEnvelope {
    // A payload that reads itself is read by hand; anything the reader refuses goes to
    // `JSONDecoder`, which accepts it or throws its own error.
    if let readable = Payload.self as? any JSONReadable.Type, let envelope = try? read(body, readable),
      envelope.type == type
    {
      return envelope
    }
    let envelope = try JSON.decode(TypedEventEnvelope.self, from: body)
    guard envelope.type == type else {
      throw DecodingError.dataCorrupted(
        DecodingError.Context(
          codingPath: [CodingKeys.type],
          debugDescription: "expected an event of type \(type), got \(envelope.type)"))
    }
    return envelope
  }
}

extension TypedEventEnvelope {
  /// The envelope read by hand, its `data` with `Payload`'s own reader.
  fileprivate static func read(_ body: Data, _ readable: any JSONReadable.Type) throws -> TypedEventEnvelope {
    var reader = JSONReader(body)
    var id: String?
    var type: String?
    var occurredAt: Date?
    var source: String?
    var correlationId: String?
    var subject: String?
    var sequence: Int64?
    var payload: Payload?
    try reader.readObject { reader, key in
      switch key {
      case "id": id = try reader.readString()
      case "type": type = try reader.readString()
      case "occurredAt": occurredAt = try reader.readDate()
      case "source": source = try reader.readString()
      case "correlationId": correlationId = reader.readNull() ? nil : try reader.readString()
      case "subject": subject = try reader.readString()
      case "sequence": sequence = try reader.readInt64()
      case "data": payload = try readable.init(reading: &reader) as? Payload
      default: try reader.skipValue()
      }
    }
    try reader.finish()
    guard let id, let type, let occurredAt, let source, let subject, let sequence, let payload else {
      throw JSONReader.Failure(
        "an event envelope needs id, type, occurredAt, source, subject, sequence, data")
    }
    return TypedEventEnvelope(
      id: id, type: type, occurredAt: occurredAt, source: source, correlationId: correlationId,
      subject: subject, sequence: sequence, payload: payload)
  }
}
