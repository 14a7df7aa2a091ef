import Foundation
import GrocerCore

/// The transactional outbox: events are appended in the same write transaction as the state
/// change that caused them, and `OutboxRelay` publishes them afterwards.
///
/// So an event is published if and only if its state change committed, even across crashes.
/// Rows are deleted once the broker confirmed them; a crash between the confirm and the delete
/// publishes them again, which consumers absorb with `Inbox`.
public enum Outbox {
  /// One row waiting to be published.
  public struct Entry: Hashable, Sendable {
    /// Position in the outbox; publishing follows it.
    public var seq: Int64
    public var message: OutgoingMessage
  }

  /// Appends `message` to the outbox. Call it inside the `write` that makes the state change.
  /// A second message with the same `messageID` is a constraint violation.
  public static func append(_ message: OutgoingMessage, in connection: any SQLConnection) throws {
    try append(contentsOf: [message], in: connection)
  }

  /// Appends `messages` in their order, several rows a statement (one change that publishes an
  /// event per product it moved).
  public static func append(contentsOf messages: [OutgoingMessage], in connection: any SQLConnection) throws {
    for run in SQLRuns.ranges(messages.count, largest: 64) {
      var bindings: [any SQLBindable] = []
      bindings.reserveCapacity(run.count * 7)
      for message in messages[run] {
        bindings += [
          message.messageID, message.exchange, message.routingKey, message.type, message.correlationID,
          message.timestamp.timeIntervalSince1970, message.body,
        ]
      }
      try connection.execute(run.count == 1 ? oneRow : insert(rows: run.count), bindings: bindings)
    }
    if !messages.isEmpty { connection.wakeCommitObservers() }
  }

  /// The insert of `rows` rows; one row's is built once (an event at a time is the common case).
  private static func insert(rows: Int) -> String {
    "INSERT INTO outbox (message_id, exchange, routing_key, type, correlation_id, timestamp, body) VALUES "
      + Array(repeating: "(?, ?, ?, ?, ?, ?, ?)", count: rows).joined(separator: ", ")
  }

  private static let oneRow = insert(rows: 1)

  /// Appends an event, as the message `envelope.message()` describes.
  public static func append(_ envelope: EventEnvelope, in connection: any SQLConnection) throws {
    try append(try envelope.message(), in: connection)
  }

  /// Rows waiting to be published.
  public static func backlog(in connection: any SQLConnection) throws -> Int {
    try connection.queryOne("SELECT count(*) FROM outbox")?.int(0) ?? 0
  }

  /// The oldest `limit` rows after position `after` (all of them by default), in publishing
  /// order.
  public static func pending(after: Int64 = 0, limit: Int, in connection: any SQLConnection) throws -> [Entry]
  {
    try connection.query(
      """
      SELECT seq, message_id, exchange, routing_key, type, correlation_id, timestamp, body
      FROM outbox WHERE seq > ? ORDER BY seq LIMIT ?
      """, after, limit
    ).map { row in
      Entry(
        seq: try row.int64(0),
        message: OutgoingMessage(
          messageID: try row.string(1), routingKey: try row.string(3), type: try row.string(4),
          body: try row.data(7), timestamp: Date(timeIntervalSince1970: try row.double(6)),
          correlationID: try row.optionalString(5), exchange: try row.string(2)))
    }
  }

  /// Removes the rows at `seqs` (ascending) once they are confirmed. Returns how many were removed.
  ///
  /// Exactly those rows: with concurrent writers (PostgreSQL, several replicas) a transaction
  /// that took a lower `seq` can commit after a batch was read, into a gap of that batch, and a
  /// range would delete it unpublished. A batch without gaps has no room for one, so it goes as
  /// one range (what a single SQLite writer always produces).
  @discardableResult
  public static func remove(_ seqs: [Int64], in connection: any SQLConnection) throws -> Int {
    guard let first = seqs.first, let last = seqs.last else { return 0 }
    if last - first + 1 == Int64(seqs.count) {
      try connection.execute("DELETE FROM outbox WHERE seq BETWEEN ? AND ?", first, last)
      return connection.changes
    }
    var removed = 0
    for run in SQLRuns.padded(seqs.count, largest: 512) {
      let placeholders = Array(repeating: "?", count: run.count).joined(separator: ",")
      try connection.execute(
        "DELETE FROM outbox WHERE seq IN (\(placeholders))", bindings: run.map { seqs[$0] })
      removed += connection.changes
    }
    return removed
  }
}
