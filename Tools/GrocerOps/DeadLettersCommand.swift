import Foundation
import GrocerAMQP
import GrocerCore
import GrocerRabbitMQ

/// The parking queue of a service queue: `cart-service` and `cart-service.parking` both name it.
func parkingQueue(_ name: String) -> String {
  name.hasSuffix(".parking") ? name : "\(name).parking"
}

/// `grocer dead-letters [<queue>] [--limit N]`: the messages waiting in parking queues, shown
/// without removing them (`AMQPAdmin.peek`: taken and put back).
public struct DeadLettersCommand: Sendable, Hashable {
  public static let usage = """
    usage: grocer dead-letters [<queue>] [--limit N]

    Shows the messages waiting in <queue>.parking (the service queue's dead-lettered messages),
    or, without <queue>, in every parking queue that holds some (found with `grocer queues`):
    message id, type, when, why it was dead-lettered and the start of its body. Nothing is
    removed (each message is taken and put back). --limit: at most N per queue (default 10).
    """

  /// The service queue or its parking queue; nil: every parking queue with messages.
  public var queue: String?
  public var limit: Int

  public init(queue: String? = nil, limit: Int = 10) {
    self.queue = queue
    self.limit = limit
  }

  static func parse(_ arguments: [String]) throws(UsageError) -> DeadLettersCommand {
    let parsed = try ParsedArguments(arguments, options: ["--limit"], usage: usage)
    guard parsed.positional.count <= 1 else {
      throw UsageError("unexpected argument \(parsed.positional[1])", usage: usage)
    }
    return DeadLettersCommand(
      queue: parsed.positional.first,
      limit: try parsed.positiveInt("--limit", default: 10, maximum: 10_000, usage: usage))
  }

  /// What one parking queue holds: its message count and the first `limit` messages.
  public struct Parked: Sendable {
    public var queue: String
    public var count: Int
    public var messages: [AMQPTakenMessage]
  }

  /// Peeks at the parking queues this command names.
  public func inspect(_ environment: OpsEnvironment) async throws -> [Parked] {
    let queues: [String]
    if let queue {
      queues = [parkingQueue(queue)]
    } else {
      queues = try await QueuesCommand.list(environment)
        .filter { $0.isParking && $0.messagesReady > 0 }.map(\.name)
    }
    var result: [Parked] = []
    for name in queues {
      let count: Int
      do {
        count = try await AMQPAdmin.messageCount(configuration: environment.amqp, queue: name)
      } catch {
        throw CommandFailure("no queue \(name) (\(error))")
      }
      let messages = try await AMQPAdmin.peek(configuration: environment.amqp, queue: name, limit: limit)
      result.append(Parked(queue: name, count: count, messages: messages))
    }
    return result
  }

  /// The text `grocer dead-letters` prints for these queues.
  public static func describe(_ parked: [Parked]) -> String {
    if parked.isEmpty { return "no dead-lettered messages" }
    var lines: [String] = []
    for queue in parked {
      lines.append(
        "\(queue.queue): \(queue.count) message\(queue.count == 1 ? "" : "s")"
          + (queue.messages.count < queue.count ? " (first \(queue.messages.count) shown)" : ""))
      for message in queue.messages { lines += describe(message).map { "  " + $0 } }
    }
    return lines.joined(separator: "\n")
  }

  static func describe(_ message: AMQPTakenMessage) -> [String] {
    let delivery = message.delivery
    var lines = ["- message id   \(delivery.messageID ?? "(none)")"]
    lines.append("  type         \(delivery.type ?? "(none: cannot be republished)")")
    if let timestamp = message.timestamp {
      lines.append("  published    \(Timestamp.string(from: timestamp))")
    }
    if let correlation = delivery.correlationID { lines.append("  correlation  \(correlation)") }
    let headers = delivery.headers
    if let reason = headers["x-first-death-reason"] {
      lines.append(
        "  dead-letter  \(reason) in \(headers["x-first-death-queue"] ?? "?")"
          + " (from exchange \(headers["x-first-death-exchange"] ?? "?"), routing key now \(delivery.routingKey))"
      )
    }
    if let count = headers["x-delivery-count"] { lines.append("  deliveries   \(count) before parking") }
    let body = String(decoding: delivery.body.prefix(300), as: UTF8.self)
      .replacingOccurrences(of: "\n", with: " ")
    lines.append(
      "  body         \(body)\(delivery.body.count > 300 ? "… (\(delivery.body.count) bytes)" : "")")
    return lines
  }

  func run(_ environment: OpsEnvironment, console: Console) async throws {
    console.out(Self.describe(try await inspect(environment)))
  }
}
