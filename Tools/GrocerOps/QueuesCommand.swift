import Foundation
import GrocerAMQP
import GrocerCore
import GrocerRuntime

/// One queue of the broker with its counts, as `rabbitmqctl list_queues` reports them.
public struct QueueInfo: Sendable, Hashable, Decodable {
  public var name: String
  public var messagesReady: Int
  public var messagesUnacknowledged: Int
  public var consumers: Int
  /// `classic` or `quorum` (empty when the listing did not say).
  public var type: String

  public init(
    name: String, messagesReady: Int, messagesUnacknowledged: Int, consumers: Int, type: String = ""
  ) {
    self.name = name
    self.messagesReady = messagesReady
    self.messagesUnacknowledged = messagesUnacknowledged
    self.consumers = consumers
    self.type = type
  }

  /// A parking queue: where a service queue's dead-lettered (poison) messages wait.
  public var isParking: Bool { name.hasSuffix(".parking") }

  enum CodingKeys: String, CodingKey {
    case name
    case messagesReady = "messages_ready"
    case messagesUnacknowledged = "messages_unacknowledged"
    case consumers
    case type
  }

  public init(from decoder: any Decoder) throws {
    let container = try decoder.container(keyedBy: CodingKeys.self)
    name = try container.decode(String.self, forKey: .name)
    // A queue whose leader is unavailable reports "" for its counts.
    messagesReady = (try? container.decode(Int.self, forKey: .messagesReady)) ?? 0
    messagesUnacknowledged = (try? container.decode(Int.self, forKey: .messagesUnacknowledged)) ?? 0
    consumers = (try? container.decode(Int.self, forKey: .consumers)) ?? 0
    type = (try? container.decode(String.self, forKey: .type)) ?? ""
  }
}

/// `grocer queues [<text>]`: every queue of the vhost (whose name contains `<text>`) with its
/// ready and unacked messages and consumers, parking queues flagged, as a table.
///
/// AMQP cannot list queues, so this runs `rabbitmqctl list_queues … --formatter json` through
/// `deploy/local/rabbitmq.sh ctl` (`GROCER_RABBITMQ_SCRIPT`): it works where that node runs
/// (locally, or with a script that reaches the production node's rabbitmqctl).
public struct QueuesCommand: Sendable, Hashable {
  public static let usage = """
    usage: grocer queues [<text>]

    Every queue of the broker's vhost whose name contains <text> (all without it), sorted by name:
    messages ready, unacked, consumers; parking queues (<queue>.parking, dead-lettered messages)
    are marked, with ! when they hold any. Runs `rabbitmqctl list_queues` through
    GROCER_RABBITMQ_SCRIPT (default deploy/local/rabbitmq.sh ctl).
    """

  public var filter: String?

  public init(filter: String? = nil) { self.filter = filter }

  static func parse(_ arguments: [String]) throws(UsageError) -> QueuesCommand {
    let parsed = try ParsedArguments(arguments, options: [], usage: usage)
    guard parsed.positional.count <= 1 else {
      throw UsageError("unexpected argument \(parsed.positional[1])", usage: usage)
    }
    return QueuesCommand(filter: parsed.positional.first)
  }

  /// The broker's queues (whose name contains `filter`), sorted by name.
  public static func list(_ environment: OpsEnvironment, filter: String? = nil) async throws -> [QueueInfo] {
    let script = environment.rabbitMQScript
    let outcome = try await Subprocess.run(
      [
        "/bin/bash", script, "ctl", "list_queues", "-p", environment.virtualHost, "name", "messages_ready",
        "messages_unacknowledged", "consumers", "type", "--formatter", "json",
      ], environment: ProcessInfo.processInfo.environment)
    guard outcome.status == 0 else {
      throw CommandFailure(
        "\(script) ctl list_queues failed (exit \(outcome.status)): "
          + outcome.output.trimmingCharacters(in: .whitespacesAndNewlines))
    }
    return try parse(listing: outcome.output)
      .filter { filter == nil || $0.name.contains(filter!) }
      .sorted { $0.name < $1.name }
  }

  /// Reads `rabbitmqctl list_queues … --formatter json` output (a JSON array, perhaps after
  /// informational lines).
  public static func parse(listing: String) throws -> [QueueInfo] {
    guard let start = listing.firstIndex(of: "["), let end = listing.lastIndex(of: "]") else {
      throw CommandFailure("rabbitmqctl printed no queue list: \(listing.prefix(500))")
    }
    do {
      return try JSONDecoder().decode([QueueInfo].self, from: Data(listing[start...end].utf8))
    } catch {
      throw CommandFailure("could not read rabbitmqctl's queue list: \(error)")
    }
  }

  /// The table `grocer queues` prints.
  public static func table(_ queues: [QueueInfo]) -> String {
    let width = max(5, queues.map(\.name.count).max() ?? 0)
    func pad(_ text: String, _ count: Int) -> String {
      text.padding(toLength: count, withPad: " ", startingAt: 0)
    }
    func right(_ number: Int, _ count: Int) -> String {
      let text = String(number)
      return String(repeating: " ", count: max(0, count - text.count)) + text
    }
    var lines = ["\(pad("QUEUE", width))    READY  UNACKED  CONSUMERS  "]
    for queue in queues {
      let flag =
        queue.isParking
        ? (queue.messagesReady + queue.messagesUnacknowledged > 0 ? "parking !" : "parking") : ""
      lines.append(
        "\(pad(queue.name, width))  \(right(queue.messagesReady, 7))  \(right(queue.messagesUnacknowledged, 7))"
          + "  \(right(queue.consumers, 9))  \(flag)")
    }
    if queues.isEmpty { lines.append("(no queues)") }
    return lines.map { $0.replacingOccurrences(of: "\\s+$", with: "", options: .regularExpression) }
      .joined(separator: "\n")
  }

  func run(_ environment: OpsEnvironment, console: Console) async throws {
    console.out(Self.table(try await Self.list(environment, filter: filter)))
  }
}
