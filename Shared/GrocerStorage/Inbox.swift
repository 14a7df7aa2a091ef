import Foundation

/// The consumer inbox: which messages a consumer already processed.
///
/// `claim` is called inside the same write transaction as the message's effect, so a redelivered
/// message (after a crash, a lost ack, or an outbox re-publish) finds its id and has no second
/// effect; if the effect rolls back, so does the claim, and the redelivery is processed.
public enum Inbox {
  /// Records `messageID` as processed by `consumer`. True the first time, false when it was
  /// already processed (the caller then skips the effect and just acks).
  public static func claim(
    messageID: String, consumer: String, at date: Date, in connection: any SQLConnection
  )
    throws -> Bool
  {
    try connection.execute(
      """
      INSERT INTO inbox (consumer, message_id, processed_at) VALUES (?, ?, ?)
      ON CONFLICT (consumer, message_id) DO NOTHING
      """,
      consumer, messageID, date.timeIntervalSince1970)
    return connection.changes == 1
  }

  /// Whether `consumer` already processed `messageID`.
  public static func contains(messageID: String, consumer: String, in connection: any SQLConnection) throws
    -> Bool
  {
    try connection.queryOne(
      "SELECT 1 FROM inbox WHERE consumer = ? AND message_id = ?", consumer, messageID) != nil
  }

  /// Forgets ids processed before `date` (keep them longer than the broker could redeliver).
  /// Returns how many were removed.
  @discardableResult
  public static func purge(olderThan date: Date, in connection: any SQLConnection) throws -> Int {
    try connection.execute("DELETE FROM inbox WHERE processed_at < ?", date.timeIntervalSince1970)
    return connection.changes
  }
}
