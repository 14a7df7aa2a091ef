import Foundation
import GrocerContracts
import GrocerCore
import GrocerHTTP
import Synchronization

/// The open `GET /v1/orders/{id}/tracking/events` streams of this process, by order.
///
/// Every committed version of an order (this process's own changes after their commit, and on
/// replicas `tracking.updated` from the others) is offered to its streams; each sends only
/// versions newer than the last it sent (a reconnecting client's `Last-Event-ID` included), so
/// nothing is repeated, and ends after a final state. Heartbeats keep idle ones alive and find
/// the ones whose client left.
public final class TrackingStreams: Sendable {
  /// One open stream and the last version it sent.
  final class Subscriber: Sendable {
    let stream: HTTPBodyStream
    let hub: HubID
    private let lastSent: Mutex<Int64>

    init(stream: HTTPBodyStream, hub: HubID, after version: Int64) {
      self.stream = stream
      self.hub = hub
      self.lastSent = Mutex(version)
    }

    /// A hub notice as an event of its own (`event: notice`, no `id:`: it is not a version, so
    /// the client's `Last-Event-ID` stays its snapshot's).
    func offer(notice: HubNoticeView?) {
      lastSent.withLock { _ in
        let data = (try? JSON.encode(notice)).map { Array($0) } ?? Array("null".utf8)
        stream.write(ServerSentEvent.event(named: "notice", data: data))
      }
    }

    /// Sends `reply` if it is newer than what was sent, and ends the stream at a final state;
    /// true when the stream is done.
    func offer(_ reply: TrackingSnapshot) -> Bool {
      lastSent.withLock { last in
        if reply.version > last {
          last = reply.version
          stream.write(ServerSentEvent.event(id: String(reply.version), data: reply.jsonBytes))
        }
        // The final state, sent now or before (a client resuming after it): nothing follows.
        if reply.status.isTerminal { stream.finish() }
        return stream.isClosed
      }
    }
  }

  private let byOrder = Mutex<[String: [ObjectIdentifier: Subscriber]]>([:])
  private let openCount = Atomic<Int>(0)
  /// The hubs' notices the events carry.
  let notices: HubNotices

  public init(notices: HubNotices = HubNotices()) { self.notices = notices }

  /// Streams open now.
  public var count: Int { openCount.load(ordering: .relaxed) }

  public func hasSubscribers(_ orderId: String) -> Bool { byOrder.withLock { $0[orderId] != nil } }

  /// A new stream of `orderId` that sends versions after `version`, told to reconnect after
  /// `retry` seconds; it is forgotten when it ends.
  public func open(_ orderId: String, hub: HubID, after version: Int64, retry: TimeInterval = 5)
    -> HTTPBodyStream
  {
    let stream = HTTPBodyStream()
    let subscriber = Subscriber(stream: stream, hub: hub, after: version)
    let key = ObjectIdentifier(subscriber)
    byOrder.withLock { $0[orderId, default: [:]][key] = subscriber }
    openCount.add(1, ordering: .relaxed)
    stream.write(ServerSentEvent.retry(milliseconds: Int(retry * 1000)))
    stream.onCancel { [weak self] in self?.forget(orderId, key) }
    return stream
  }

  /// Offers `record` as the clients read it at `now` to the order's streams.
  public func publish(_ record: TrackingRecord, at now: Date) {
    guard hasSubscribers(record.orderId) else { return }
    publish(record.reply(at: now, notices: notices))
  }

  /// Offers a snapshot as the clients read it to its order's streams.
  public func publish(_ reply: TrackingSnapshot) {
    guard let subscribers = byOrder.withLock({ $0[reply.orderId].map { Array($0) } }) else { return }
    for (key, subscriber) in subscribers where subscriber.offer(reply) { forget(reply.orderId, key) }
  }

  /// The hub's notice changed: every open stream of an order at that hub gets it (the streams
  /// of finished orders are closed already).
  public func noticeChanged(hub: HubID, at now: Date) {
    let view = notices.current(hub: hub, at: now)
    let subscribers = byOrder.withLock { $0.values.flatMap { $0.values }.filter { $0.hub == hub } }
    for subscriber in subscribers { subscriber.offer(notice: view) }
  }

  /// A comment on every stream; returns how many are open after it.
  @discardableResult
  public func heartbeat() -> Int {
    let all = byOrder.withLock {
      $0.flatMap { order, subscribers in subscribers.map { (order, $0.key, $0.value) } }
    }
    for (order, key, subscriber) in all where !subscriber.stream.write(ServerSentEvent.comment("heartbeat")) {
      forget(order, key)
    }
    return count
  }

  private func forget(_ orderId: String, _ key: ObjectIdentifier) {
    let removed = byOrder.withLock { byOrder -> Bool in
      guard byOrder[orderId]?.removeValue(forKey: key) != nil else { return false }
      if byOrder[orderId]?.isEmpty == true { byOrder[orderId] = nil }
      return true
    }
    if removed { openCount.subtract(1, ordering: .relaxed) }
  }
}
