import CRabbitMQ
import Foundation
import GrocerAMQP
import GrocerCore

/// C strings that must outlive a librabbitmq call. `amqp_cstring_bytes` on a Swift String would
/// keep a pointer to a temporary, so every string passed in is copied here and freed afterwards.
final class CStringArena {
  private var pointers: [UnsafeMutablePointer<CChar>] = []

  func bytes(_ string: String) -> amqp_bytes_t {
    let pointer = strdup(string)!
    pointers.append(pointer)
    return amqp_bytes_t(len: strlen(pointer), bytes: UnsafeMutableRawPointer(pointer))
  }

  func cString(_ string: String) -> UnsafePointer<CChar> {
    let pointer = strdup(string)!
    pointers.append(pointer)
    return UnsafePointer(pointer)
  }

  deinit {
    for pointer in pointers { free(pointer) }
  }
}

/// An argument in a declare's table.
enum AMQPFieldValue {
  case string(String)
  case int(Int32)
}

/// Properties of a published message.
struct AMQPOutgoingProperties {
  var messageID: String?
  var type: String?
  var correlationID: String?
  var replyTo: String?
  var timestamp: Date?
  var expirationMilliseconds: Int?
  var persistent = true
  var contentType: String? = "application/json"
}

/// One channel (1 unless said otherwise) of one open connection. Only ever used on that
/// connection's thread.
struct AMQPChannel {
  let connection: amqp_connection_state_t
  let number: amqp_channel_t

  init(connection: amqp_connection_state_t, number: amqp_channel_t = 1) {
    self.connection = connection
    self.number = number
  }

  /// Throws unless the last synchronous call succeeded.
  func check(_ operation: String) throws {
    try Self.check(amqp_get_rpc_reply(connection), operation)
  }

  static func check(_ reply: amqp_rpc_reply_t, _ operation: String) throws {
    switch reply.reply_type {
    case AMQP_RESPONSE_NORMAL:
      return
    case AMQP_RESPONSE_LIBRARY_EXCEPTION:
      throw AMQPError.library(
        operation: operation, message: String(cString: amqp_error_string2(reply.library_error)))
    case AMQP_RESPONSE_SERVER_EXCEPTION:
      throw closeError(reply.reply)
    default:
      throw AMQPError.library(operation: operation, message: "no reply")
    }
  }

  /// The error carried by a `channel.close` or `connection.close` method.
  static func closeError(_ method: amqp_method_t) -> AMQPError {
    guard let decoded = method.decoded else {
      return .brokerClosed(code: 0, text: "unknown")
    }
    if method.id == GROCER_AMQP_CONNECTION_CLOSE {
      let close = decoded.assumingMemoryBound(to: amqp_connection_close_t.self).pointee
      return .brokerClosed(code: Int(close.reply_code), text: string(close.reply_text) ?? "")
    }
    if method.id == GROCER_AMQP_CHANNEL_CLOSE {
      let close = decoded.assumingMemoryBound(to: amqp_channel_close_t.self).pointee
      return .brokerClosed(code: Int(close.reply_code), text: string(close.reply_text) ?? "")
    }
    return .brokerClosed(code: 0, text: "unexpected method \(method.id)")
  }

  static func string(_ bytes: amqp_bytes_t) -> String? {
    guard bytes.len > 0, let base = bytes.bytes else { return nil }
    return String(decoding: UnsafeRawBufferPointer(start: base, count: bytes.len), as: UTF8.self)
  }

  static func status(_ code: Int32, _ operation: String) throws {
    guard code >= 0 else {
      throw AMQPError.library(operation: operation, message: String(cString: amqp_error_string2(code)))
    }
  }

  private func withTable<T>(
    _ arguments: [(String, AMQPFieldValue)], _ arena: CStringArena, _ body: (amqp_table_t) throws -> T
  ) rethrows -> T {
    var entries = arguments.map { key, value -> amqp_table_entry_t in
      let field: amqp_field_value_t
      switch value {
      case .string(let text): field = grocer_amqp_utf8_value(arena.bytes(text))
      case .int(let number): field = grocer_amqp_i32_value(number)
      }
      return amqp_table_entry_t(key: arena.bytes(key), value: field)
    }
    return try entries.withUnsafeMutableBufferPointer { buffer in
      try body(amqp_table_t(num_entries: Int32(buffer.count), entries: buffer.baseAddress))
    }
  }

  func declareExchange(_ name: String, type: String, durable: Bool) throws {
    let arena = CStringArena()
    amqp_exchange_declare(
      connection, number, arena.bytes(name), arena.bytes(type), 0, durable ? 1 : 0, 0, 0,
      amqp_empty_table)
    try check("exchange.declare \(name)")
  }

  /// Declares a queue; returns its name (server-generated when `name` is empty) and counts.
  @discardableResult
  func declareQueue(
    _ name: String, passive: Bool = false, durable: Bool, exclusive: Bool, autoDelete: Bool,
    arguments: [(String, AMQPFieldValue)] = []
  ) throws -> (name: String, messageCount: Int, consumerCount: Int) {
    let arena = CStringArena()
    let ok = withTable(arguments, arena) { table in
      amqp_queue_declare(
        connection, number, arena.bytes(name), passive ? 1 : 0, durable ? 1 : 0, exclusive ? 1 : 0,
        autoDelete ? 1 : 0, table)
    }
    try check("queue.declare \(name)")
    guard let ok else { throw AMQPError.library(operation: "queue.declare \(name)", message: "no reply") }
    return (
      Self.string(ok.pointee.queue) ?? name, Int(ok.pointee.message_count), Int(ok.pointee.consumer_count)
    )
  }

  func bind(
    queue: String, exchange: String, routingKey: String, arguments: [(String, AMQPFieldValue)] = []
  ) throws {
    let arena = CStringArena()
    _ = withTable(arguments, arena) { table in
      amqp_queue_bind(
        connection, number, arena.bytes(queue), arena.bytes(exchange), arena.bytes(routingKey), table)
    }
    try check("queue.bind \(queue) \(routingKey)")
  }

  func unbind(
    queue: String, exchange: String, routingKey: String, arguments: [(String, AMQPFieldValue)] = []
  ) throws {
    let arena = CStringArena()
    _ = withTable(arguments, arena) { table in
      amqp_queue_unbind(
        connection, number, arena.bytes(queue), arena.bytes(exchange), arena.bytes(routingKey), table)
    }
    try check("queue.unbind \(queue) \(routingKey)")
  }

  /// `ifEmpty`: the broker refuses (406) to delete a queue that holds messages (classic queues
  /// only; RabbitMQ 3.10 answers 540 NOT_IMPLEMENTED for a quorum queue).
  func deleteQueue(_ name: String, ifEmpty: Bool = false) throws {
    let arena = CStringArena()
    amqp_queue_delete(connection, number, arena.bytes(name), 0, ifEmpty ? 1 : 0)
    try check("queue.delete \(name)")
  }

  func qos(prefetch: Int) throws {
    amqp_basic_qos(connection, number, 0, UInt16(clamping: prefetch), 0)
    try check("basic.qos")
  }

  func confirmSelect() throws {
    amqp_confirm_select(connection, number)
    try check("confirm.select")
  }

  /// Starts a consumer; returns its tag.
  func consume(queue: String, noAck: Bool, exclusive: Bool = false) throws -> String {
    let arena = CStringArena()
    let ok = amqp_basic_consume(
      connection, number, arena.bytes(queue), amqp_empty_bytes, 0, noAck ? 1 : 0,
      exclusive ? 1 : 0, amqp_empty_table)
    try check("basic.consume \(queue)")
    return ok.flatMap { Self.string($0.pointee.consumer_tag) } ?? ""
  }

  /// Writes one `basic.publish` (asynchronous at the protocol level: errors come back later as
  /// frames, except socket errors, which throw here).
  func publish(
    exchange: String, routingKey: String, mandatory: Bool, properties: AMQPOutgoingProperties,
    body: Data
  ) throws {
    let arena = CStringArena()
    var props = amqp_basic_properties_t()
    var flags: amqp_flags_t = 0
    if let contentType = properties.contentType {
      props.content_type = arena.bytes(contentType)
      flags |= GROCER_AMQP_FLAG_CONTENT_TYPE
    }
    if properties.persistent {
      props.delivery_mode = 2
      flags |= GROCER_AMQP_FLAG_DELIVERY_MODE
    }
    if let messageID = properties.messageID {
      props.message_id = arena.bytes(messageID)
      flags |= GROCER_AMQP_FLAG_MESSAGE_ID
    }
    if let type = properties.type {
      props.type = arena.bytes(type)
      flags |= GROCER_AMQP_FLAG_TYPE
    }
    if let correlationID = properties.correlationID {
      props.correlation_id = arena.bytes(correlationID)
      flags |= GROCER_AMQP_FLAG_CORRELATION_ID
    }
    if let replyTo = properties.replyTo {
      props.reply_to = arena.bytes(replyTo)
      flags |= GROCER_AMQP_FLAG_REPLY_TO
    }
    if let timestamp = properties.timestamp {
      props.timestamp = UInt64(max(0, timestamp.timeIntervalSince1970))
      flags |= GROCER_AMQP_FLAG_TIMESTAMP
    }
    if let expiration = properties.expirationMilliseconds {
      props.expiration = arena.bytes(String(max(0, expiration)))
      flags |= GROCER_AMQP_FLAG_EXPIRATION
    }
    props._flags = flags
    let code = body.withUnsafeBytes { raw -> Int32 in
      let bytes = amqp_bytes_t(len: raw.count, bytes: UnsafeMutableRawPointer(mutating: raw.baseAddress))
      return amqp_basic_publish(
        connection, number, arena.bytes(exchange), arena.bytes(routingKey), mandatory ? 1 : 0, 0,
        &props, bytes)
    }
    try Self.status(code, "basic.publish")
  }

  func ack(_ deliveryTag: UInt64, multiple: Bool) throws {
    try Self.status(amqp_basic_ack(connection, number, deliveryTag, multiple ? 1 : 0), "basic.ack")
  }

  func nack(_ deliveryTag: UInt64, requeue: Bool) throws {
    try Self.status(amqp_basic_nack(connection, number, deliveryTag, 0, requeue ? 1 : 0), "basic.nack")
  }

  /// Takes one message from `queue` with `basic.get` (manual ack: it stays unacked on this
  /// channel until acked or nacked); nil when the queue is empty.
  func get(queue: String) throws -> (deliveryTag: UInt64, delivery: AMQPDelivery, timestamp: Date?)? {
    let arena = CStringArena()
    let reply = amqp_basic_get(connection, number, arena.bytes(queue), 0)
    try Self.check(reply, "basic.get \(queue)")
    // basic.get-ok is method 60.71, basic.get-empty 60.72 (the C constants are cast macros).
    guard reply.reply.id == 0x003C_0047, let decoded = reply.reply.decoded else { return nil }
    let ok = decoded.assumingMemoryBound(to: amqp_basic_get_ok_t.self).pointee
    let (delivery, timestamp) = try readMessageAndTimestamp(
      routingKey: Self.string(ok.routing_key) ?? "", exchange: Self.string(ok.exchange) ?? "",
      redelivered: ok.redelivered != 0)
    return (ok.delivery_tag, delivery, timestamp)
  }

  /// Reads the header and body frames that follow a `basic.deliver` or `basic.return`.
  func readMessage(routingKey: String, exchange: String, redelivered: Bool) throws -> AMQPDelivery {
    try readMessageAndTimestamp(routingKey: routingKey, exchange: exchange, redelivered: redelivered).0
  }

  /// `readMessage`, with the message's `timestamp` property (whole seconds) when it has one.
  func readMessageAndTimestamp(
    routingKey: String, exchange: String, redelivered: Bool
  ) throws -> (AMQPDelivery, Date?) {
    var message = amqp_message_t()
    try Self.check(amqp_read_message(connection, number, &message, 0), "read message")
    defer { amqp_destroy_message(&message) }
    let props = message.properties
    let flags = props._flags
    func field(_ flag: amqp_flags_t, _ bytes: amqp_bytes_t) -> String? {
      flags & flag != 0 ? Self.string(bytes) : nil
    }
    var headers: [String: String] = [:]
    if flags & GROCER_AMQP_FLAG_HEADERS != 0, props.headers.num_entries > 0,
      let entries = props.headers.entries
    {
      for index in 0..<Int(props.headers.num_entries) {
        guard let key = Self.string(entries[index].key) else { continue }
        var ok: Int32 = 0
        let number = withUnsafePointer(to: entries[index].value) { grocer_amqp_field_integer($0, &ok) }
        if ok != 0 {
          headers[key] = String(number)
        } else if withUnsafePointer(to: entries[index].value, { grocer_amqp_field_is_bytes($0) }) != 0 {
          headers[key] = Self.string(entries[index].value.value.bytes) ?? ""
        }
      }
    }
    let body =
      message.body.len > 0 && message.body.bytes != nil
      ? Data(bytes: message.body.bytes, count: message.body.len) : Data()
    let timestamp =
      flags & GROCER_AMQP_FLAG_TIMESTAMP != 0 ? Date(timeIntervalSince1970: Double(props.timestamp)) : nil
    let delivery = AMQPDelivery(
      body: body, routingKey: routingKey, exchange: exchange,
      messageID: field(GROCER_AMQP_FLAG_MESSAGE_ID, props.message_id),
      type: field(GROCER_AMQP_FLAG_TYPE, props.type),
      correlationID: field(GROCER_AMQP_FLAG_CORRELATION_ID, props.correlation_id),
      replyTo: field(GROCER_AMQP_FLAG_REPLY_TO, props.reply_to),
      redelivered: redelivered,
      deliveryCount: headers["x-delivery-count"].flatMap { Int($0) } ?? 0,
      headers: headers)
    return (delivery, timestamp)
  }

  /// Declares the two exchanges every connection relies on.
  func declareEventExchanges() throws {
    try declareExchange(EventTopology.exchange, type: "topic", durable: true)
    try declareExchange(EventTopology.deadLetterExchange, type: "headers", durable: true)
  }

  /// Declares a consumer's queue, its bindings and (for quorum queues) its parking queue;
  /// returns the queue's actual name, and whether its parking queue exists with other arguments
  /// (an older build's classic one: kept and used until `grocer parking migrate` replaces it).
  func declare(_ spec: QueueSpec) throws -> (name: String, classicParking: Bool) {
    switch spec.kind {
    case .durableQuorum(let expiresAfter):
      var expiry: [(String, AMQPFieldValue)] = []
      if let expiresAfter {
        let milliseconds =
          expiresAfter.components.seconds * 1000 + expiresAfter.components.attoseconds / 1_000_000_000_000_000
        expiry = [("x-expires", .int(Int32(clamping: max(1, milliseconds))))]
      }
      let quorum: [(String, AMQPFieldValue)] = [("x-queue-type", .string("quorum"))] + expiry
      let classicParking = try declareRefusable(spec.parkingQueueName, arguments: quorum)
      try bindParking(spec.parkingQueueName, for: spec.name)
      try declareQueue(spec.name, durable: true, exclusive: false, autoDelete: false, arguments: quorum)
      for key in spec.bindingKeys {
        try bind(queue: spec.name, exchange: EventTopology.exchange, routingKey: key)
      }
      return (spec.name, classicParking)
    case .transient:
      let declared = try declareQueue(spec.name, durable: false, exclusive: true, autoDelete: true)
      for key in spec.bindingKeys {
        try bind(queue: declared.name, exchange: EventTopology.exchange, routingKey: key)
      }
      return (declared.name, false)
    }
  }

  /// Binds `parking` to the dead-letter exchange for the messages that died in `queue`.
  func bindParking(_ parking: String, for queue: String) throws {
    try bind(
      queue: parking, exchange: EventTopology.deadLetterExchange, routingKey: "",
      arguments: Self.parkingBinding(for: queue))
  }

  /// The headers a parking queue binds on: `x-first-death-queue` = the queue the message died
  /// in (`all-with-x`: match on an `x-` header too, which plain `all` ignores).
  static func parkingBinding(for queue: String) -> [(String, AMQPFieldValue)] {
    [("x-match", .string("all-with-x")), ("x-first-death-queue", .string(queue))]
  }

  /// Declares a durable queue with `arguments` unless a queue of that name exists with other
  /// arguments (406 PRECONDITION_FAILED), which is left as it is; true then.
  func declareRefusable(_ name: String, arguments: [(String, AMQPFieldValue)]) throws -> Bool {
    try refusable { channel in
      try channel.declareQueue(name, durable: true, exclusive: false, autoDelete: false, arguments: arguments)
    } == nil
  }

  /// Runs `body` on a channel of its own (this one's number + 1); nil when the broker refused it
  /// with one of `codes` (406 PRECONDITION_FAILED, 404 NOT_FOUND), which closes only that
  /// channel, so this one goes on.
  func refusable<T>(codes: Set<Int> = [406], _ body: (AMQPChannel) throws -> T) throws -> T? {
    let side: amqp_channel_t = number + 1
    amqp_channel_open(connection, side)
    try check("channel.open \(side)")
    let result: T
    do {
      result = try body(AMQPChannel(connection: connection, number: side))
    } catch AMQPError.brokerClosed(let code, _) where codes.contains(code) {
      var closeOK = amqp_channel_close_ok_t(dummy: 0)
      try Self.status(
        amqp_send_method(connection, side, GROCER_AMQP_CHANNEL_CLOSE_OK, &closeOK), "channel.close-ok")
      return nil
    }
    try Self.check(amqp_channel_close(connection, side, AMQP_REPLY_SUCCESS), "channel.close \(side)")
    return result
  }
}
