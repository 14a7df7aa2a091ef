import Foundation
import GrocerContracts
import GrocerCore
import Synchronization

/// The newest snapshot of each order this process knows, so the app's 5-second polls are
/// answered from memory inside the HTTP callback (no thread hop, no read, no encoding).
///
/// Kept exact by the store: every committed change and creation is remembered after its commit
/// (`afterCommit`, in commit order), and a read from the database is remembered only if nothing
/// newer is known — versions only rise, so the highest one seen is the truth. Only used when this
/// process is its database's one writer (SQLite): replicas on PostgreSQL read every poll.
public final class TrackingReplyCache: Sendable {
  /// What answering needs: who may read it, and the reply's bytes (encoded on first use).
  public struct Entry: Sendable {
    public var version: Int64
    public var userId: String
    public var hub: HubID
    public var riderId: String?
    var snapshot: TrackingSnapshot
    var body: [UInt8]?
  }

  private let entries = Mutex<[String: Entry]>([:])
  /// Past this many orders the cache starts again (finished orders are read rarely).
  private let capacity: Int

  public init(capacity: Int = 200_000) { self.capacity = capacity }

  /// Remembers `record` unless a newer version of the order is known.
  public func remember(_ record: TrackingRecord) {
    entries.withLock { entries in
      if let known = entries[record.orderId], known.version >= record.version { return }
      if entries.count >= capacity { entries.removeAll(keepingCapacity: true) }
      entries[record.orderId] = Entry(
        version: record.version, userId: record.userId, hub: record.hub, riderId: record.state.rider?.id,
        snapshot: record.snapshot, body: nil)
    }
  }

  /// The entry of `orderId` with its reply's bytes, or nil if not known here.
  public func entry(_ orderId: String) -> Entry? {
    guard var entry = entries.withLock({ $0[orderId] }) else { return nil }
    if entry.body == nil {
      entry.body = entry.snapshot.jsonBytes
      let encoded = entry
      entries.withLock { entries in
        if entries[orderId]?.version == encoded.version { entries[orderId]?.body = encoded.body }
      }
    }
    return entry
  }
}
