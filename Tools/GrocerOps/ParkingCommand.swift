import Foundation
import GrocerAMQP
import GrocerCore
import GrocerRabbitMQ

/// `grocer parking migrate`: replaces every classic parking queue an older build declared with
/// a quorum queue of the same name, keeping its messages.
///
/// A classic queue lives on one node, so on a cluster a service whose parking queue's node is
/// down cannot declare it; quorum queues are replicated. A queue cannot change its type, so the
/// messages move through `<parking>.migrating`, which takes the new dead letters meanwhile:
/// 1. `.migrating` (quorum) is bound for the service queue's dead letters, the old queue unbound;
/// 2. the old queue's messages move to `.migrating`, then it is deleted only if empty (else
///    move again), so nothing dead-lettered meanwhile is lost;
/// 3. the quorum parking queue is declared and bound, `.migrating` unbound, its messages moved
///    back, and it is deleted.
/// Each message moves with its properties and headers, confirmed before it is removed from where
/// it was. Run it again after a failure: it carries on from the queues it finds (a message
/// dead-lettered in the instant both queues are bound may be parked twice, and a republished
/// message is applied once by its consumers).
public struct ParkingCommand: Sendable, Hashable {
  public static let usage = """
    usage: grocer parking migrate

    Replaces each classic parking queue (<queue>.parking, declared by builds before parking
    queues were quorum queues) with a quorum queue, keeping its messages and every message
    dead-lettered meanwhile. Idempotent: run it again after a failure. Finds the queues with
    `grocer queues` (rabbitmqctl through GROCER_RABBITMQ_SCRIPT).
    """

  public init() {}

  static func parse(_ arguments: [String]) throws(UsageError) -> ParkingCommand {
    guard arguments == ["migrate"] else {
      throw UsageError(
        arguments.isEmpty ? "parking what?" : "unexpected argument \(arguments.joined(separator: " "))",
        usage: usage)
    }
    return ParkingCommand()
  }

  static let migratingSuffix = ".migrating"

  /// What one queue's migration did.
  public struct Migrated: Sendable, Hashable {
    /// The parking queue, now a quorum queue.
    public var parking: String
    /// Messages it held before and kept.
    public var messages: Int
  }

  /// Migrates every classic parking queue (and finishes any migration a failure interrupted).
  public func migrate(_ environment: OpsEnvironment) async throws -> [Migrated] {
    let queues = try await QueuesCommand.list(environment)
    let classic = queues.filter { $0.isParking && $0.type == "classic" }.map(\.name)
    let interrupted = queues.map(\.name).filter { $0.hasSuffix(".parking" + Self.migratingSuffix) }
      .map { String($0.dropLast(Self.migratingSuffix.count)) }
    var migrated: [Migrated] = []
    for parking in Set(classic + interrupted).sorted() {
      migrated.append(
        try await migrate(parking, fromClassic: classic.contains(parking), environment.amqp))
    }
    return migrated
  }

  private func migrate(_ parking: String, fromClassic: Bool, _ amqp: AMQPConfiguration) async throws
    -> Migrated
  {
    let queue = String(parking.dropLast(".parking".count))
    let temporary = parking + Self.migratingSuffix
    var messages = 0
    if fromClassic {
      try await AMQPAdmin.declareQuorumQueue(configuration: amqp, temporary)
      try await AMQPAdmin.routeDeadLetters(configuration: amqp, of: queue, to: temporary, bind: true)
      try await AMQPAdmin.routeDeadLetters(configuration: amqp, of: queue, to: parking, bind: false)
      var deleted = false
      for _ in 0..<10 where !deleted {
        messages += try await AMQPAdmin.moveMessages(
          configuration: amqp, from: parking, to: EventTopology.deadLetterExchange)
        deleted = try await AMQPAdmin.deleteQueueIfEmpty(configuration: amqp, parking)
      }
      guard deleted else {
        throw CommandFailure("\(parking) kept receiving messages after it was unbound; run again")
      }
    }
    try await AMQPAdmin.declareQuorumQueue(configuration: amqp, parking)
    try await AMQPAdmin.routeDeadLetters(configuration: amqp, of: queue, to: parking, bind: true)
    try await AMQPAdmin.routeDeadLetters(configuration: amqp, of: queue, to: temporary, bind: false)
    _ = try await AMQPAdmin.moveMessages(
      configuration: amqp, from: temporary, to: EventTopology.deadLetterExchange)
    try await AMQPAdmin.deleteQueues(configuration: amqp, [temporary])
    return Migrated(parking: parking, messages: messages)
  }

  func run(_ environment: OpsEnvironment, console: Console) async throws {
    let migrated = try await migrate(environment)
    for queue in migrated {
      console.out("\(queue.parking): now a quorum queue, \(queue.messages) message(s) kept")
    }
    if migrated.isEmpty { console.out("no classic parking queue to migrate") }
  }
}
