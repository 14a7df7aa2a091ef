import Foundation
import GrocerContracts
import GrocerCore
import Synchronization

/// The newest snapshot of each order this process knows, so the app's 5-second polls are
/// answered from memory inside the HTTP callback (no thread hop, no read, no encoding).
///
/// Kept exact by the store: every committed change and creation is remembered after its commit
/// (`afterCommit`, in commit order), and a read from the database is remembered only if nothing
/// newer is known — versions and delivery revisions only rise, so the highest pair seen is the
/// truth. Only used when this process is its database's one writer (SQLite): replicas on
/// PostgreSQL read every poll.
public final class TrackingReplyCache: Sendable {
  /// What answering needs: who may read it, and the reply's bytes (encoded on first use, and
  /// again when the Live Activity's state turns by itself).
  public struct Entry: Sendable {
    public var version: Int64
    public var userId: String
    public var hub: HubID
    public var riderId: String?
    var record: TrackingRecord
    var body: [UInt8]?
    /// When `body` stops being true (a current card reaching its stale date, a notice ending).
    var bodyUntil: Date?
    /// The notices' revision `body` was built at.
    var noticeRevision: Int64 = -1

    var revision: Int64 { record.liveActivity.revision }
  }

  private let entries = Mutex<[String: Entry]>([:])
  /// Past this many orders the cache starts again (finished orders are read rarely).
  private let capacity: Int
  /// The hubs' notices the replies carry.
  let notices: HubNotices

  public init(capacity: Int = 200_000, notices: HubNotices = HubNotices()) {
    self.capacity = capacity
    self.notices = notices
  }

  /// Remembers `record` unless a newer version or delivery revision of the order is known.
  public func remember(_ record: TrackingRecord) {
    entries.withLock { entries in
      if let known = entries[record.orderId],
        (known.version, known.revision) >= (record.version, record.liveActivity.revision)
      {
        return
      }
      if entries.count >= capacity { entries.removeAll(keepingCapacity: true) }
      entries[record.orderId] = Entry(
        version: record.version, userId: record.userId, hub: record.hub, riderId: record.state.rider?.id,
        record: record, body: nil)
    }
  }

  /// The entry of `orderId` with its reply's bytes at `now`, or nil if not known here.
  public func entry(_ orderId: String, at now: Date) -> Entry? {
    guard var entry = entries.withLock({ $0[orderId] }) else { return nil }
    let noticeRevision = notices.revision
    if entry.body == nil || entry.bodyUntil.map({ now >= $0 }) == true
      || entry.noticeRevision != noticeRevision
    {
      let hasToken = entry.record.liveActivityToken != nil
      entry.body = entry.record.reply(at: now, notices: notices).jsonBytes
      entry.noticeRevision = noticeRevision
      let changes = [
        entry.record.liveActivity.viewChanges(hasToken: hasToken, after: now),
        notices.expiry(hub: entry.hub, at: now),
      ]
      entry.bodyUntil = changes.compactMap { $0 }.min()
      let encoded = entry
      entries.withLock { entries in
        if let known = entries[orderId],
          (known.version, known.revision) == (encoded.version, encoded.revision)
        {
          entries[orderId] = encoded
        }
      }
    }
    return entry
  }
}
