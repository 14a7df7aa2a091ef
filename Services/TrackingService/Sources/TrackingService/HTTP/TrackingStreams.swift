import Foundation
import GrocerContracts
import GrocerCore
import GrocerHTTP
import Synchronization

/// The open `GET /v1/orders/{id}/tracking/events` streams of this process, by order.
///
/// Every committed version of an order (this process's own changes after their commit, and on
/// replicas `tracking.updated` from the others) is offered to its streams; each sends versions
/// in order, only those newer than the last it sent (a reconnecting client's `Last-Event-ID`
/// included), so nothing is repeated, and ends after a final state. A version that comes before
/// the one it follows (the other replica's, still on its way through the broker, or a commit
/// that overtook another) is held until the missing one comes or `gapWait` has passed.
/// Heartbeats keep idle ones alive and find the ones whose client left.
public final class TrackingStreams: Sendable {
  /// One open stream, the last version it sent and the versions it holds back.
  final class Subscriber: Sendable {
    let stream: HTTPBodyStream
    let hub: HubID
    private let state: Mutex<State>

    struct State {
      var lastSent: Int64
      /// Whether the snapshot read when the stream opened was offered (`start`); until then
      /// every version is held.
      var started = false
      var held: [Int64: TrackingSnapshot] = [:]
      /// Whether a `flush` is due.
      var flushing = false
    }

    init(stream: HTTPBodyStream, hub: HubID, after version: Int64) {
      self.stream = stream
      self.hub = hub
      self.state = Mutex(State(lastSent: version))
    }

    /// A hub notice as an event of its own (`event: notice`, no `id:`: it is not a version, so
    /// the client's `Last-Event-ID` stays its snapshot's).
    func offer(notice: HubNoticeView?) {
      state.withLock { _ in
        let data = (try? JSON.encode(notice)).map { Array($0) } ?? Array("null".utf8)
        stream.write(ServerSentEvent.event(named: "notice", data: data))
      }
    }

    /// The snapshot read when the stream opened: it and what was held up to it go out now (the
    /// versions between the client's and it are gone), then the ones that follow in order.
    func start(with reply: TrackingSnapshot) -> Outcome {
      state.withLock { state in
        state.started = true
        if reply.version > state.lastSent { state.held[reply.version] = reply }
        sendHeld(through: reply.version, &state)
        // A client that resumes after the final state: nothing follows.
        if reply.status.isTerminal { stream.finish() }
        return sendInOrder(&state)
      }
    }

    /// A committed version: sent if it is the next one, held if one before it is missing.
    func offer(_ reply: TrackingSnapshot) -> Outcome {
      state.withLock { state in
        guard reply.version > state.lastSent else { return outcome(&state) }
        state.held[reply.version] = reply
        return state.started ? sendInOrder(&state) : outcome(&state)
      }
    }

    /// `gapWait` passed: what is held goes out in order, the missing versions skipped; true
    /// when the stream is done.
    func flush() -> Bool {
      state.withLock { state in
        state.flushing = false
        sendHeld(through: .max, &state)
        return stream.isClosed
      }
    }

    enum Outcome { case closed, open, waiting }

    /// Every held version up to `limit`, in order, gaps and all.
    private func sendHeld(through limit: Int64, _ state: inout State) {
      for version in state.held.keys.sorted() where version <= limit { send(version, &state) }
    }

    private func sendInOrder(_ state: inout State) -> Outcome {
      while state.held[state.lastSent + 1] != nil { send(state.lastSent + 1, &state) }
      return outcome(&state)
    }

    private func send(_ version: Int64, _ state: inout State) {
      guard let reply = state.held.removeValue(forKey: version), !stream.isClosed else { return }
      state.lastSent = version
      stream.write(ServerSentEvent.event(id: String(version), data: reply.jsonBytes))
      if reply.status.isTerminal {
        state.held = [:]
        stream.finish()
      }
    }

    /// `.waiting` asks for one `flush` while versions are held.
    private func outcome(_ state: inout State) -> Outcome {
      if stream.isClosed { return .closed }
      guard state.started, !state.held.isEmpty, !state.flushing else { return .open }
      state.flushing = true
      return .waiting
    }
  }

  private let byOrder = Mutex<[String: [ObjectIdentifier: Subscriber]]>([:])
  private let openCount = Atomic<Int>(0)
  /// The hubs' notices the events carry.
  let notices: HubNotices
  /// How long a stream holds a version back for one before it that has not come.
  let gapWait: TimeInterval

  public init(notices: HubNotices = HubNotices(), gapWait: TimeInterval = 1) {
    self.notices = notices
    self.gapWait = gapWait
  }

  /// Streams open now.
  public var count: Int { openCount.load(ordering: .relaxed) }

  public func hasSubscribers(_ orderId: String) -> Bool { byOrder.withLock { $0[orderId] != nil } }

  /// A new stream of `orderId` that sends versions after `version`, told to reconnect after
  /// `retry` seconds; it is forgotten when it ends. Its first version goes out with `start`.
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

  /// Gives the stream `open` made the order's snapshot as read after it opened.
  public func start(_ stream: HTTPBodyStream, orderId: String, with record: TrackingRecord, at now: Date) {
    let reply = record.reply(at: now, notices: notices)
    guard
      let (key, subscriber) = byOrder.withLock({
        $0[orderId]?.first { $0.value.stream === stream }
      })
    else { return }
    settle(subscriber.start(with: reply), orderId, key, subscriber)
  }

  /// Offers `record` as the clients read it at `now` to the order's streams.
  public func publish(_ record: TrackingRecord, at now: Date) {
    guard hasSubscribers(record.orderId) else { return }
    publish(record.reply(at: now, notices: notices))
  }

  /// Offers a snapshot as the clients read it to its order's streams.
  public func publish(_ reply: TrackingSnapshot) {
    guard let subscribers = byOrder.withLock({ $0[reply.orderId].map { Array($0) } }) else { return }
    for (key, subscriber) in subscribers { settle(subscriber.offer(reply), reply.orderId, key, subscriber) }
  }

  private func settle(
    _ outcome: Subscriber.Outcome, _ orderId: String, _ key: ObjectIdentifier, _ subscriber: Subscriber
  ) {
    switch outcome {
    case .open: break
    case .closed: forget(orderId, key)
    case .waiting:
      DispatchQueue.global().asyncAfter(deadline: .now() + gapWait) { [weak self] in
        if subscriber.flush() { self?.forget(orderId, key) }
      }
    }
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
