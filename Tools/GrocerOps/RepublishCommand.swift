import Foundation
import GrocerAMQP
import GrocerCore
import GrocerRabbitMQ
import GrocerRuntime

/// `grocer republish <queue> (--message-id ID | --all) [--limit N]`: after a fix, sends
/// dead-lettered messages of `<queue>.parking` back through `grocer.events`.
///
/// Each chosen message is published again with its routing key = its `type` (the event type,
/// which is how services route events), with its message id, type, correlation id, timestamp and
/// body, on a publisher with confirms and `mandatory` (a message no queue is bound for fails
/// instead of vanishing). It is removed from the parking queue only after the broker confirmed
/// it; anything not confirmed stays parked. A failure midway leaves the rest parked (a message
/// confirmed but whose removal was lost would be sent twice: consumers drop a repeated
/// message id).
public struct RepublishCommand: Sendable, Hashable {
  public static let usage = """
    usage: grocer republish <queue> (--message-id ID | --all) [--limit N]

    Publishes dead-lettered messages of <queue>.parking again to grocer.events, routing key = the
    message's type, with its id and properties (publisher confirms), and removes each from the
    parking queue once the broker confirmed it. --message-id: that message only; --all: every
    message (up to --limit, default 1000). Messages without a type or id stay parked.
    """

  public var queue: String
  /// Only this message; nil: all of them.
  public var messageID: String?
  /// At most this many messages are looked at (taken from the parking queue at once).
  public var limit: Int

  public init(queue: String, messageID: String?, limit: Int = 1000) {
    self.queue = queue
    self.messageID = messageID
    self.limit = limit
  }

  static func parse(_ arguments: [String]) throws(UsageError) -> RepublishCommand {
    let parsed = try ParsedArguments(
      arguments, options: ["--message-id", "--limit"], flags: ["--all"], usage: usage)
    guard let queue = parsed.positional.first else { throw UsageError("no queue given", usage: usage) }
    guard parsed.positional.count == 1 else {
      throw UsageError("unexpected argument \(parsed.positional[1])", usage: usage)
    }
    let id = parsed.options["--message-id"]
    let all = parsed.flags.contains("--all")
    guard (id != nil) != all else {
      throw UsageError("say which messages: --message-id ID or --all (one of them)", usage: usage)
    }
    return RepublishCommand(
      queue: queue, messageID: id,
      limit: try parsed.positiveInt("--limit", default: 1000, maximum: 100_000, usage: usage))
  }

  /// What a republish did.
  public struct Outcome: Sendable, Hashable {
    /// Message ids published again, confirmed and removed from the parking queue.
    public var republished: [String] = []
    /// Messages left parked, with why (no type, no id).
    public var skipped: [String] = []
    /// Messages looked at.
    public var examined = 0
    /// The publish that failed (the messages from it on stay parked).
    public var failure: String?
  }

  /// Republishes; throws when nothing matched `--message-id` or a publish failed (after removing
  /// what was confirmed before).
  public func republish(_ environment: OpsEnvironment) async throws -> Outcome {
    let parking = parkingQueue(queue)
    do {
      _ = try await AMQPAdmin.messageCount(configuration: environment.amqp, queue: parking)
    } catch {
      throw CommandFailure("no queue \(parking) (\(error))")
    }
    let publisher = AMQPPublisher(
      configuration: environment.amqp.named("grocer-republish"), mandatory: true, logger: environment.logger,
      metrics: MetricsRegistry(), name: "grocer-republish")
    try await publisher.start()
    guard await publisher.waitUntilConnected(timeout: .seconds(10)) else {
      await publisher.shutdown()
      throw CommandFailure("cannot reach the broker at \(environment.amqp.url)")
    }
    let messageID = self.messageID
    let outcome: Outcome
    do {
      outcome = try await AMQPAdmin.withMessages(
        configuration: environment.amqp, queue: parking, limit: limit
      ) {
        messages in
        var outcome = Outcome(examined: messages.count)
        var confirmed: Set<UInt64> = []
        for message in messages {
          let delivery = message.delivery
          if let messageID, delivery.messageID != messageID { continue }
          guard let type = delivery.type, !type.isEmpty else {
            outcome.skipped.append("\(delivery.messageID ?? "(no id)"): no type, so no routing key")
            continue
          }
          guard let id = delivery.messageID, !id.isEmpty else {
            outcome.skipped.append("(no id) of type \(type): no message id for consumers to dedupe by")
            continue
          }
          do {
            try await publisher.publish([
              OutgoingMessage(
                messageID: id, routingKey: type, type: type, body: delivery.body,
                timestamp: message.timestamp ?? Date(), correlationID: delivery.correlationID)
            ])
          } catch {
            outcome.failure = "publishing \(id) (\(type)) failed: \(error)"
            break
          }
          confirmed.insert(message.deliveryTag)
          outcome.republished.append(id)
        }
        return (acknowledge: confirmed, result: outcome)
      }
    } catch {
      await publisher.shutdown()
      throw error
    }
    await publisher.shutdown()
    if let failure = outcome.failure {
      throw CommandFailure(
        "\(failure); republished before it: \(outcome.republished.count), the rest stays in \(parking)")
    }
    if let messageID, outcome.republished.isEmpty && outcome.skipped.isEmpty {
      throw CommandFailure("no message \(messageID) among the \(outcome.examined) first in \(parking)")
    }
    return outcome
  }

  func run(_ environment: OpsEnvironment, console: Console) async throws {
    let outcome = try await republish(environment)
    for skipped in outcome.skipped { console.err("left parked: \(skipped)") }
    console.out(
      "republished \(outcome.republished.count) of \(outcome.examined) message(s) from \(parkingQueue(queue))"
        + (outcome.republished.isEmpty ? "" : ": " + outcome.republished.joined(separator: ", ")))
    if !outcome.skipped.isEmpty { throw CommandFailure("\(outcome.skipped.count) message(s) left parked") }
  }
}
