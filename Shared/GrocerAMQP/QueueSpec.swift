import Foundation
import GrocerCore

/// A queue a consumer reads, declared (with its bindings on `grocer.events`) on every connect.
public struct QueueSpec: Sendable, Hashable {
  public enum Kind: Sendable, Hashable {
    /// A service's own durable quorum queue. A message returned more than
    /// `EventTopology.deliveryLimit` times, or rejected, is dead-lettered (through
    /// `EventTopology.deadLetterExchange`) to `<name>.parking`, so a poison message never blocks
    /// the queue behind it. Both come from the broker policy `EventTopology.deadLetterPolicy`,
    /// as RabbitMQ recommends, not from queue arguments: an operator can change them without
    /// redeclaring queues. `expiresAfter` (RabbitMQ's `x-expires`, on both queues) has the
    /// broker delete them once unused that long: for test and throw-away deployments, whose
    /// queues would otherwise collect events forever.
    case durableQuorum(expiresAfter: Duration? = nil)
    /// A classic exclusive auto-delete queue that lives as long as the connection: one per
    /// replica, so every replica sees every event (cache invalidation). Empty name = server-named.
    case transient
  }

  public var name: String
  /// Routing keys or topic patterns (`stock.#`) bound on `grocer.events`.
  public var bindingKeys: [String]
  public var kind: Kind

  public init(name: String, bindingKeys: [String], kind: Kind = .durableQuorum()) {
    self.name = name
    self.bindingKeys = bindingKeys
    self.kind = kind
  }

  /// The queue dead-lettered messages of a quorum queue end in.
  public var parkingQueueName: String { "\(name).parking" }
}

/// One message handed to a consumer's handler.
public struct AMQPDelivery: Sendable {
  public var body: Data
  public var routingKey: String
  public var exchange: String
  public var messageID: String?
  public var type: String?
  public var correlationID: String?
  public var replyTo: String?
  public var redelivered: Bool
  /// How many times the broker delivered this message before (quorum queues' `x-delivery-count`);
  /// 0 on the first delivery.
  public var deliveryCount: Int
  /// String and integer headers (integers rendered in decimal).
  public var headers: [String: String]

  public init(
    body: Data, routingKey: String, exchange: String = EventTopology.exchange,
    messageID: String? = nil, type: String? = nil, correlationID: String? = nil,
    replyTo: String? = nil, redelivered: Bool = false, deliveryCount: Int = 0,
    headers: [String: String] = [:]
  ) {
    self.body = body
    self.routingKey = routingKey
    self.exchange = exchange
    self.messageID = messageID
    self.type = type
    self.correlationID = correlationID
    self.replyTo = replyTo
    self.redelivered = redelivered
    self.deliveryCount = deliveryCount
    self.headers = headers
  }
}

/// What a handler wants done with a delivery once it returned.
public enum AMQPDisposition: Sendable, Hashable {
  /// Done (the effect is committed): remove it from the queue.
  case ack
  /// Failed for now: put it back (nack requeue). Counts toward the quorum delivery limit, after
  /// which the broker parks it.
  case retry
  /// Never going to work: dead-letter it to the parking queue at once (nack without requeue).
  case reject
  /// Something it needs is down for now (the database restarting): the consumer keeps the
  /// delivery, waits and runs the handler on it again, taking nothing new meanwhile. It is not
  /// returned to the broker, so an outage does not use up its delivery limit.
  case pause
}

extension AMQPDisposition {
  /// What a handler whose work threw answers: `.pause` while a dependency is down
  /// (`isTemporaryOutage`), `.retry` otherwise.
  public static func failed(_ error: any Error) -> AMQPDisposition {
    error.isTemporaryOutage ? .pause : .retry
  }
}
