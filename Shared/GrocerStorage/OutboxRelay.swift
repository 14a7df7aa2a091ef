import Foundation
import GrocerCore
import GrocerRuntime
import Synchronization

/// Publishes the outbox: reads the oldest rows, publishes them with confirms, deletes them.
/// Two batches are at the publisher at once (the next goes out while the previous one waits for
/// its confirms); after a failed batch, a later one may already be confirmed, so events can
/// arrive out of order then: consumers keep the newest per subject by `sequence`.
///
/// Runs as a `LifecycleService` (after the database and the broker connection, before
/// consumers and HTTP); its loop ending other than by `shutdown` ends the process. While rows
/// are waiting it publishes batch after batch; when the outbox is empty it sleeps until a commit on the database wakes it (it registers itself with
/// `onCommit`) or `idlePoll` passes. A publish error is logged and the same rows are retried
/// after an exponential back-off (100 ms doubling to 5 s): nothing is lost, and a row is deleted
/// only after the publisher confirmed it. A crash between confirm and delete publishes the
/// batch again; consumers dedupe by message id with `Inbox`.
///
/// Confirmed rows are deleted at once (no "sent" flag to purge later): the outbox only ever
/// holds what still has to go out, so its row count is the backlog.
///
/// Batches of `defaultBatchSize`, two at the publisher at once (Benchmarks/README, outbox-relay,
/// has the measurements).
public final class OutboxRelay: LifecycleService {
  public let name = "outbox-relay"

  private let database: any SQLDatabase
  private let publisher: any ConfirmedPublisher
  private let batchSize: Int
  private let idlePoll: Duration
  private let linger: Duration
  private let logger: Logger
  private let signal = WakeSignal()
  private let stopping = Atomic<Bool>(false)
  private let loop = BackgroundLoop()
  private let failsAfterFirstPass: Bool

  private let registry: MetricsRegistry
  private let backlogGauge: Gauge
  private let publishedTotal: Counter
  private let failuresTotal: Counter
  private let lease: OutboxLease
  /// Until when this relay's lease is known to hold (renewed when half of it is left).
  private let leaseValidUntil = Mutex<Date>(.distantPast)

  /// A lease with less than this left is renewed before the next batch (longer than the
  /// publisher's 30 s confirm time-out).
  static let leaseRenewalMargin: TimeInterval = 40
  static let initialBackoff: Duration = .milliseconds(100)
  static let maximumBackoff: Duration = .seconds(5)
  /// Batches at the publisher at once: two let one batch's confirms come back while the next is
  /// sent (measured with `make bench`, outbox-relay).
  public static let pipelineDepth = 2
  /// Rows read and published at once: what every service's relay uses.
  public static let defaultBatchSize = 1000
  /// How long an idle relay waits after a commit woke it before reading the outbox, so that the
  /// commits of that time leave in its batch instead of a read, publish, confirm and delete each
  /// (Benchmarks/tracking has what it saves a rider fix). Events are asynchronous: no request
  /// waits for one to leave.
  public static let defaultLinger: Duration = .milliseconds(20)
  /// How long `shutdown` lets a batch in flight finish before cancelling it.
  static let shutdownGrace: Duration = .seconds(5)

  public init(
    database: any SQLDatabase, publisher: any ConfirmedPublisher,
    batchSize: Int = OutboxRelay.defaultBatchSize,
    idlePoll: Duration = .milliseconds(200), linger: Duration = OutboxRelay.defaultLinger,
    leaseDuration: TimeInterval = 60, logger: Logger,
    metrics: MetricsRegistry, failsAfterFirstPass: Bool = false
  ) {
    self.failsAfterFirstPass = failsAfterFirstPass
    self.lease = OutboxLease(owner: OutboxLease.processOwner(), duration: leaseDuration)
    self.database = database
    self.publisher = publisher
    self.batchSize = max(1, batchSize)
    self.idlePoll = idlePoll
    self.linger = linger
    self.logger = logger
    self.registry = metrics
    self.backlogGauge = metrics.gauge("outbox_backlog", help: "Outbox rows waiting to be published.")
    self.publishedTotal = metrics.counter(
      "outbox_published_total", help: "Outbox messages published and confirmed.")
    self.failuresTotal = metrics.counter(
      "outbox_publish_failures_total", help: "Outbox batches whose publish failed and will be retried.")
    let gauge = backlogGauge
    metrics.onCollect { [weak database] in
      guard let database, let backlog = try? database.read({ try Outbox.backlog(in: $0) }) else { return }
      gauge.set(Double(backlog))
    }
    database.onCommit { [weak self] in self?.notify() }
  }

  /// Wakes the relay now (a commit added rows). Cheap; called after every commit.
  public func notify() {
    signal.notify()
  }

  public func start() async throws {
    stopping.store(false, ordering: .releasing)
    loop.start { try await self.relay() }
  }

  /// Returns when the relay's loop has ended, throwing what ended it.
  public func finished() async throws {
    try await loop.finished()
  }

  /// Stops after the batch in flight (waiting at most a few seconds for its confirms, then
  /// cancelling it; unconfirmed rows stay in the outbox for the next start).
  public func shutdown() async {
    stopping.store(true, ordering: .releasing)
    signal.notify()
    guard let task = loop.task else { return }
    let watchdog = Task {
      try await Task.sleep(for: Self.shutdownGrace)
      task.cancel()
    }
    await loop.stop(cancelling: false)
    watchdog.cancel()
    // Let another replica's relay take over at once rather than after the lease expires.
    let lease = self.lease
    leaseValidUntil.withLock { $0 = .distantPast }
    database.outboxRelayedHere(false)
    _ = try? await database.writeAsync { try lease.release(in: $0) }
  }

  private var shouldStop: Bool { stopping.load(ordering: .acquiring) || Task.isCancelled }

  /// One batch handed to the publisher and not yet settled.
  private struct InFlight {
    var entries: [Outbox.Entry]
    var publish: Task<Void, any Error>
    var last: Int64 { entries.last?.seq ?? 0 }
  }

  private func relay() async throws {
    logger.info("outbox relay started")
    var backoff = Self.initialBackoff
    var typeCounters: [String: Counter] = [:]
    var inFlight: [InFlight] = []
    // The last row read: the next batch starts after it.
    var cursor: Int64 = 0
    // The batch read while `pipelineDepth` batches were out, handed over the moment the oldest
    // is settled (empty: nothing more was waiting then).
    var readAhead: [Outbox.Entry]?
    var passes = 0
    /// After a failure or a lost lease: nothing read and not yet published is kept, and the
    /// next read starts from the oldest row again.
    func forgetUnpublished() {
      cursor = 0
      readAhead = nil
    }
    while !shouldStop {
      if failsAfterFirstPass && passes > 0 { throw OutboxRelayDrillFailure() }
      passes += 1
      guard await holdsLease() else {
        await settleAll(&inFlight, &typeCounters)
        forgetUnpublished()
        await pause(for: idlePoll)
        continue
      }
      // Keep up to `pipelineDepth` batches at the publisher (while one waits for its confirms
      // the next is already on the wire) and one more read, ready to go.
      if inFlight.count < Self.pipelineDepth || readAhead == nil {
        let batch: [Outbox.Entry]
        if inFlight.count < Self.pipelineDepth, let ready = readAhead {
          batch = ready
          readAhead = nil
        } else {
          do {
            let (limit, after) = (batchSize, cursor)
            batch = try await database.readAsync { try Outbox.pending(after: after, limit: limit, in: $0) }
          } catch {
            logger.error("outbox read failed", ["error": "\(error)"])
            await settleAll(&inFlight, &typeCounters)
            forgetUnpublished()
            await pause(for: backoff)
            backoff = min(backoff * 2, Self.maximumBackoff)
            continue
          }
          cursor = batch.last?.seq ?? cursor
        }
        if inFlight.count == Self.pipelineDepth {
          readAhead = batch
          continue
        }
        if !batch.isEmpty {
          let publisher = self.publisher
          let messages = batch.map(\.message)
          // Started at once on this task, so `publish` hands this batch over before the relay
          // reads the next: batches reach the broker in the order of their rows (two tasks
          // started the ordinary way raced, and a later batch could go first).
          inFlight.append(
            InFlight(entries: batch, publish: Task.immediate { try await publisher.publish(messages) }))
          continue
        }
      }
      guard !inFlight.isEmpty else {
        // Everything read was removed: the next read starts from the oldest row again, so a
        // row that committed late below the cursor (concurrent writers) is not passed over.
        forgetUnpublished()
        backlogGauge.set(0)
        await signal.wait(timeout: idlePoll)
        if linger > .zero {
          try? await Task.sleep(for: linger)
          // The commits of the linger are read next; their wakes would only cost an empty read.
          signal.clear()
        }
        continue
      }
      let oldest = inFlight.removeFirst()
      if await settle(oldest, &typeCounters) {
        backoff = Self.initialBackoff
      } else {
        // Not known to be sent (or sent and not removed): settle what else is out, then read
        // again from the oldest row still waiting. Nothing is removed that was not confirmed;
        // what was confirmed and not removed goes out again and consumers dedupe.
        await settleAll(&inFlight, &typeCounters)
        forgetUnpublished()
        await pause(for: backoff)
        backoff = min(backoff * 2, Self.maximumBackoff)
      }
    }
    await settleAll(&inFlight, &typeCounters)
    logger.info("outbox relay stopped")
  }

  /// Waits for `batch`'s confirms and removes its rows; false if the publish or the removal
  /// failed.
  private func settle(_ batch: InFlight, _ typeCounters: inout [String: Counter]) async -> Bool {
    let publish = batch.publish
    do {
      try await withTaskCancellationHandler {
        try await publish.value
      } onCancel: {
        publish.cancel()
      }
    } catch {
      failuresTotal.increment()
      logger.warning(
        "outbox publish failed; will retry", ["error": "\(error)", "outbox.batch": "\(batch.entries.count)"])
      return false
    }
    do {
      let seqs = batch.entries.map(\.seq)
      _ = try await database.writeAsync { try Outbox.remove(seqs, in: $0) }
    } catch {
      // Published but not removed: the next pass publishes these again (consumers dedupe).
      logger.error("outbox delete failed after publish", ["error": "\(error)"])
      return false
    }
    publishedTotal.increment(by: batch.entries.count)
    for entry in batch.entries {
      let type = entry.message.type
      let counter =
        typeCounters[type]
        ?? registry.counter(
          "events_published_total", help: "Events published, by type.", labels: [("type", type)])
      typeCounters[type] = counter
      counter.increment()
    }
    logger.debug(
      "outbox batch published", ["outbox.batch": "\(batch.entries.count)", "outbox.last": "\(batch.last)"])
    return true
  }

  /// Settles every batch still at the publisher, oldest first.
  private func settleAll(_ inFlight: inout [InFlight], _ typeCounters: inout [String: Counter]) async {
    while !inFlight.isEmpty {
      _ = await settle(inFlight.removeFirst(), &typeCounters)
    }
  }

  /// Whether this relay may publish now: it holds the outbox lease (60 s by default; a replica
  /// that crashed holding it is taken over when it expires, one that stops releases it).
  private func holdsLease() async -> Bool {
    let now = Date()
    // Renewed while more than a publish's time-out (30 s) is left, so a batch never outlives
    // the lease and another replica's relay cannot take over in the middle of it.
    let margin = min(Self.leaseRenewalMargin, lease.duration / 2)
    if leaseValidUntil.withLock({ $0 }) > now.addingTimeInterval(margin) { return true }
    let lease = self.lease
    do {
      // Look first: while another relay holds it, this one only reads.
      if try await database.readAsync({ try lease.heldByAnother(at: now, in: $0) }) {
        database.outboxRelayedHere(false)
        return false
      }
      guard try await database.writeAsync({ try lease.acquire(at: now, in: $0) }) else {
        database.outboxRelayedHere(false)
        return false
      }
      leaseValidUntil.withLock { $0 = now.addingTimeInterval(lease.duration) }
      database.outboxRelayedHere(true)
      return true
    } catch {
      logger.error("outbox lease failed", ["error": "\(error)"])
      database.outboxRelayedHere(false)
      return false
    }
  }

  /// Sleeps for `duration`, returning early only when the relay is stopping (commits do not
  /// shorten a back-off).
  private func pause(for duration: Duration) async {
    let deadline = ContinuousClock.now + duration
    while !shouldStop {
      let remaining = deadline - ContinuousClock.now
      guard remaining > .zero else { return }
      await signal.wait(timeout: remaining)
    }
  }
}

/// What the relay's loop throws in the fault drill that makes it die after its first pass
/// (`failsAfterFirstPass`; never set in production).
public struct OutboxRelayDrillFailure: Error, CustomStringConvertible {
  public var description: String { "outbox relay fault drill: the loop failed after its first pass" }
}
