import CRabbitMQ
import Foundation
import GrocerAMQP
import GrocerCore

/// The broker chores of replacing a parking queue (`grocer parking migrate`): each is one short
/// connection, so a step that fails leaves the queues as the steps before it made them.
extension AMQPAdmin {
  /// Declares a durable quorum queue (or finds it).
  public static func declareQuorumQueue(configuration: AMQPConfiguration, _ name: String) async throws {
    try await run(configuration) { channel in
      _ = try channel.declareQueue(
        name, durable: true, exclusive: false, autoDelete: false,
        arguments: [("x-queue-type", .string("quorum"))])
    }
  }

  /// Routes the messages that die in `queue` to `parking` (`bind: false`: stops doing so).
  public static func routeDeadLetters(
    configuration: AMQPConfiguration, of queue: String, to parking: String, bind: Bool
  ) async throws {
    try await run(configuration) { channel in
      if bind {
        try channel.bindParking(parking, for: queue)
      } else {
        try channel.unbind(
          queue: parking, exchange: EventTopology.deadLetterExchange, routingKey: "",
          arguments: AMQPChannel.parkingBinding(for: queue))
      }
    }
  }

  /// Deletes a classic queue if it holds no message; false when it holds some.
  public static func deleteQueueIfEmpty(configuration: AMQPConfiguration, _ name: String) async throws -> Bool
  {
    try await run(configuration) { channel in
      try channel.refusable { try $0.deleteQueue(name, ifEmpty: true) } != nil
    }
  }

  /// Moves every message of `queue` to `exchange`, each with its routing key, properties and
  /// headers (a dead-lettered message's `x-death` too): published with `mandatory` and a
  /// publisher confirm before it is acked at the source, one at a time, so a message is never
  /// in neither queue (a failure leaves it at the source). Returns how many moved.
  public static func moveMessages(
    configuration: AMQPConfiguration, from queue: String, to exchange: String
  ) async throws -> Int {
    try await run(configuration) { channel in
      try channel.confirmSelect()
      var moved = 0
      while try channel.moveOne(from: queue, to: exchange) { moved += 1 }
      return moved
    }
  }
}

extension AMQPChannel {
  /// Takes one message of `queue` and republishes it as it is to `exchange`; false when the
  /// queue is empty. Needs confirms selected on this channel.
  fileprivate func moveOne(from queue: String, to exchange: String) throws -> Bool {
    let arena = CStringArena()
    let reply = amqp_basic_get(connection, number, arena.bytes(queue), 0)
    try Self.check(reply, "basic.get \(queue)")
    // basic.get-ok is method 60.71, basic.get-empty 60.72 (the C constants are cast macros).
    guard reply.reply.id == 0x003C_0047, let decoded = reply.reply.decoded else { return false }
    let ok = decoded.assumingMemoryBound(to: amqp_basic_get_ok_t.self).pointee
    let deliveryTag = ok.delivery_tag
    let routingKey = Self.string(ok.routing_key) ?? ""
    var message = amqp_message_t()
    try Self.check(amqp_read_message(connection, number, &message, 0), "read message")
    defer { amqp_destroy_message(&message) }
    try Self.status(
      amqp_basic_publish(
        connection, number, arena.bytes(exchange), arena.bytes(routingKey), 1, 0, &message.properties,
        message.body),
      "basic.publish")
    try awaitConfirm(of: routingKey)
    try ack(deliveryTag, multiple: false)
    return true
  }

  /// Waits for the confirm of the one message in flight; throws if it was returned or nacked.
  private func awaitConfirm(of routingKey: String) throws {
    var returned = false
    var timeout = timeval(tv_sec: 30, tv_usec: 0)
    while true {
      var frame = amqp_frame_t()
      let status = amqp_simple_wait_frame_noblock(connection, &frame, &timeout)
      guard status == AMQP_STATUS_OK.rawValue else {
        throw AMQPError.library(
          operation: "await confirm", message: String(cString: amqp_error_string2(status)))
      }
      guard frame.frame_type == UInt8(AMQP_FRAME_METHOD) else { continue }
      let method = frame.payload.method
      switch method.id {
      case GROCER_AMQP_BASIC_ACK where returned:
        throw AMQPError.unroutable(messageID: routingKey)
      case GROCER_AMQP_BASIC_ACK:
        return
      case GROCER_AMQP_BASIC_NACK:
        throw AMQPError.nacked(messageID: routingKey)
      case GROCER_AMQP_BASIC_RETURN:
        _ = try readMessage(routingKey: routingKey, exchange: "", redelivered: false)
        returned = true
      case GROCER_AMQP_CONNECTION_CLOSE, GROCER_AMQP_CHANNEL_CLOSE:
        throw Self.closeError(method)
      default:
        continue
      }
    }
  }
}
