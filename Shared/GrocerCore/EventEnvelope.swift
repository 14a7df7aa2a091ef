import Foundation

/// The envelope of every event on `grocer.events`.
///
/// `subject` names the aggregate with its kind (`stock/<hub>/<sku>`, `order/<id>`: see
/// `EventSubject`) and `sequence` is that subject's version, so a consumer can drop an event
/// older than one it already applied for the same subject.
public struct EventEnvelope: Codable, Hashable, Sendable {
  public var id: String
  public var type: String
  public var occurredAt: Date
  public var source: String
  public var correlationId: String?
  public var subject: String
  public var sequence: Int64
  public var data: JSONValue

  public init(
    id: String, type: String, occurredAt: Date, source: String, correlationId: String?,
    subject: String, sequence: Int64, data: JSONValue
  ) {
    self.id = id
    self.type = type
    self.occurredAt = occurredAt
    self.source = source
    self.correlationId = correlationId
    self.subject = subject
    self.sequence = sequence
    self.data = data
  }

  /// Builds an envelope around a typed payload.
  public init<Payload: Encodable>(
    id: String, type: String, occurredAt: Date, source: String, correlationId: String?,
    subject: String, sequence: Int64, payload: Payload
  ) throws {
    self.init(
      id: id, type: type, occurredAt: occurredAt, source: source, correlationId: correlationId,
      subject: subject, sequence: sequence, data: try JSONValue(encoding: payload))
  }

  /// The payload decoded as `T`.
  public func payload<T: Decodable>(as type: T.Type) throws -> T {
    try data.decode(as: type)
  }

  /// The message of the envelope around `payload`, written in one pass: the payload is encoded
  /// once and set into the envelope's text, without the `JSONValue` round trip of
  /// `init(…payload:)` + `message()`. Decodes to the
  /// same envelope.
  public static func message<Payload: Encodable>(
    id: String, type: String, occurredAt: Date, source: String, correlationId: String?,
    subject: String, sequence: Int64, payload: Payload
  ) throws -> OutgoingMessage {
    message(
      id: id, type: type, occurredAt: occurredAt, source: source, correlationId: correlationId,
      subject: subject,
      sequence: sequence, payloadJSON: try JSON.encode(payload))
  }

  /// `message(…payload:)` for a payload already written as JSON (by hand, on a hot path).
  public static func message(
    id: String, type: String, occurredAt: Date, source: String, correlationId: String?,
    subject: String, sequence: Int64, payloadJSON: some Sequence<UInt8>
  ) -> OutgoingMessage {
    // Keys in sorted order, as `JSON.encoder()` writes them.
    var out = JSONBytes(capacity: 384)
    out.beginObject()
    if let correlationId {
      out.key("correlationId")
      out.string(correlationId)
    }
    out.key("data")
    out.json(payloadJSON)
    out.key("id")
    out.string(id)
    out.key("occurredAt")
    out.date(occurredAt)
    out.key("sequence")
    out.int(sequence)
    out.key("source")
    out.string(source)
    out.key("subject")
    out.string(subject)
    out.key("type")
    out.string(type)
    out.endObject()
    return OutgoingMessage(
      messageID: id, routingKey: type, type: type, body: Data(out.bytes), timestamp: occurredAt,
      correlationID: correlationId)
  }

  /// The message this envelope travels as.
  public func message() throws -> OutgoingMessage {
    OutgoingMessage(
      messageID: id, routingKey: type, type: type, body: try JSON.encode(self),
      timestamp: occurredAt, correlationID: correlationId)
  }
}

/// One message ready to publish: what the outbox stores and the publisher sends.
///
/// AMQP properties: `message_id`, `type`, `content_type: application/json`, `timestamp`,
/// `correlation_id`, persistent delivery mode.
public struct OutgoingMessage: Hashable, Sendable {
  public var messageID: String
  public var routingKey: String
  public var type: String
  public var body: Data
  public var timestamp: Date
  public var correlationID: String?
  /// Exchange to publish to; the events exchange unless said otherwise.
  public var exchange: String

  public init(
    messageID: String, routingKey: String, type: String, body: Data, timestamp: Date,
    correlationID: String?, exchange: String = EventTopology.exchange
  ) {
    self.messageID = messageID
    self.routingKey = routingKey
    self.type = type
    self.body = body
    self.timestamp = timestamp
    self.correlationID = correlationID
    self.exchange = exchange
  }
}

/// Names every service agrees on.
public enum EventTopology {
  /// The durable topic exchange all events go through; routing key = event type.
  public static let exchange = "grocer.events"
  /// Where dead-lettered messages go: a headers exchange that routes each to the parking queue
  /// of the queue it died in (`<queue>.parking` binds on `x-first-death-queue = <queue>`).
  /// Queues are pointed at it by the broker policy `deadLetterPolicy`, not by their arguments.
  public static let deadLetterExchange = "grocer.parking"
  /// The policy (in `deploy/rabbitmq/definitions.json`, applied by `deploy/local/rabbitmq.sh`)
  /// that gives every queue except `amq.*` and the parking queues `deadLetterExchange` and
  /// `deliveryLimit`.
  public static let deadLetterPolicy = "grocer-dead-letter"
  /// The policy's pattern: every queue but the broker's own and the parking queues.
  public static let deadLetterPolicyPattern = #"^(?!amq\.)(?!.*\.parking$)"#
  /// A message returned (nacked, or in flight when its consumer died) more than this many times
  /// is dead-lettered by the broker (quorum queues' `delivery-limit`, set by the policy).
  public static let deliveryLimit = 5
}

/// Publishes messages and returns only when the broker has confirmed every one of them.
///
/// The outbox relay marks rows sent only after this returns, so an error (a nack, a lost
/// connection, a time-out) means "not known to be sent" and the rows are tried again. The
/// messages are handed over before the call first suspends, so calls made one after another
/// reach the broker in that order even while earlier ones still wait for their confirms.
public protocol ConfirmedPublisher: Sendable {
  func publish(_ messages: [OutgoingMessage]) async throws
}
