import CCurl
import Foundation
import GrocerCore
import GrocerRuntime
import Synchronization

/// Owns one libcurl multi handle on a dedicated thread.
///
/// A multi handle and its easy handles must only be used from one thread, and waiting on
/// sockets must not park Swift's cooperative pool (two threads here), so the client gets its own
/// `Thread` that runs `curl_multi_perform` and sleeps in `curl_multi_poll`. Other threads queue
/// commands under a lock and call `curl_multi_wakeup` (the one multi call that is thread-safe),
/// and callers' continuations are resumed from this thread.
final class CurlMultiLoop: @unchecked Sendable {
  /// A request handed over by `HTTP2Client.send`.
  struct Submission: Sendable {
    let id: UInt64
    let request: HTTPClientRequest
    /// Submission time plus the request time-out: waiting in the queue counts.
    let deadline: ContinuousClock.Instant
    let continuation: CheckedContinuation<HTTPClientResponse, any Error>
  }

  enum Command: Sendable {
    case send(Submission)
    case cancel(UInt64)
  }

  private struct Mailbox {
    var commands: [Command] = []
    var stopRequested = false
    /// Set by the thread when it takes its last batch; the multi handle is freed after it, so
    /// nothing may queue or call `curl_multi_wakeup` any more.
    var closed = false
  }

  let configuration: HTTP2ClientConfiguration
  private let logger: Logger
  /// Read by other threads only under the mailbox lock, while not `closed`.
  private let multi: UnsafeMutableRawPointer
  private let mailbox = Mutex(Mailbox())
  /// Finished when the loop thread has ended.
  let ended = Completion()
  private let finished = Mutex<(done: Bool, waiters: [CheckedContinuation<Void, Never>])>((false, []))
  private let connectionsCounter = Atomic<Int>(0)
  private let inFlightCounter = Atomic<Int>(0)

  // Touched only on the loop thread.
  /// Waiting for a slot (`maxInFlight`); nil where a waiting request was cancelled.
  private var pending: [Submission?] = []
  private var pendingHead = 0
  /// Handed to libcurl, by easy handle.
  private var active: [UnsafeMutableRawPointer: CurlTransfer] = [:]

  init(configuration: HTTP2ClientConfiguration, logger: Logger) throws(HTTPClientError) {
    let global = CurlGlobal.initialized
    guard global == CURLE_OK else {
      throw HTTPClientError(
        kind: .shutDown, curlCode: Int(global.rawValue),
        message: "curl_global_init failed: \(String(cString: curl_easy_strerror(global)))")
    }
    guard let multi = curl_multi_init() else {
      throw HTTPClientError(kind: .shutDown, message: "curl_multi_init failed")
    }
    self.multi = multi
    self.configuration = configuration
    self.logger = logger
    grocer_curl_multi_setopt_long(multi, CURLMOPT_PIPELINING, GROCER_CURLPIPE_MULTIPLEX)
    grocer_curl_multi_setopt_long(
      multi, CURLMOPT_MAX_HOST_CONNECTIONS, configuration.maxConnectionsPerHost)
    grocer_curl_multi_setopt_long(
      multi, CURLMOPT_MAX_CONCURRENT_STREAMS, configuration.maxConcurrentStreams)
  }

  /// Connections libcurl opened so far (each TCP/TLS handshake counts once).
  var connectionsOpened: Int { connectionsCounter.load(ordering: .relaxed) }

  /// Requests submitted and not yet answered.
  var inFlight: Int { inFlightCounter.load(ordering: .relaxed) }

  func start() {
    let thread = Thread { [self] in self.run() }
    thread.name = configuration.name
    thread.start()
  }

  /// Queues a command and wakes the thread; false once the loop has stopped.
  @discardableResult
  func submit(_ command: Command) -> Bool {
    mailbox.withLock { box in
      guard !box.closed else { return false }
      box.commands.append(command)
      if case .send = command { inFlightCounter.add(1, ordering: .relaxed) }
      curl_multi_wakeup(multi)
      return true
    }
  }

  /// Asks the thread to fail everything in flight and stop; returns once it has.
  func stop() async {
    mailbox.withLock { box in
      guard !box.closed else { return }
      box.stopRequested = true
      curl_multi_wakeup(multi)
    }
    await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
      let done = finished.withLock { state -> Bool in
        if state.done { return true }
        state.waiters.append(continuation)
        return false
      }
      if done { continuation.resume() }
    }
  }

  // MARK: - The loop thread

  private func run() {
    while true {
      let (commands, stopping) = mailbox.withLock { box in
        defer { box.commands = [] }
        if box.stopRequested { box.closed = true }
        return (box.commands, box.stopRequested)
      }
      for command in commands {
        switch command {
        case .send(let submission): pending.append(submission)
        case .cancel(let id): cancel(id)
        }
      }
      if stopping { break }
      activatePending(now: .now)
      var running: Int32 = 0
      curl_multi_perform(multi, &running)
      collectFinished()
      activatePending(now: .now)
      curl_multi_poll(multi, nil, 0, Int32(pollTimeout()), nil)
    }
    failEverything()
    curl_multi_cleanup(multi)
    let waiters = finished.withLock { state in
      state.done = true
      defer { state.waiters = [] }
      return state.waiters
    }
    for waiter in waiters { waiter.resume() }
    ended.finish()
  }

  /// Hands waiting requests to libcurl while there are free slots; fails those whose time ran
  /// out while they waited.
  private func activatePending(now: ContinuousClock.Instant) {
    while pendingHead < pending.count {
      guard let submission = pending[pendingHead] else {
        pendingHead += 1
        continue
      }
      if submission.deadline <= now {
        pendingHead += 1
        complete(submission.continuation, throwing: Self.queueTimeout)
        continue
      }
      guard active.count < configuration.maxInFlight else { break }
      pendingHead += 1
      do {
        let transfer = try CurlTransfer(
          submission: submission, configuration: configuration, timeout: submission.deadline - now)
        let code = curl_multi_add_handle(multi, transfer.handle)
        if code != CURLM_OK {
          inFlightCounter.subtract(1, ordering: .relaxed)
          transfer.fail(
            HTTPClientError(
              kind: .invalidRequest, curlCode: Int(code.rawValue),
              message: String(cString: curl_multi_strerror(code))))
        } else {
          active[transfer.handle] = transfer
        }
      } catch {
        complete(submission.continuation, throwing: error)
      }
    }
    if pendingHead == pending.count {
      pending.removeAll(keepingCapacity: true)
      pendingHead = 0
    } else if pendingHead > 1024 && pendingHead * 2 > pending.count {
      pending.removeFirst(pendingHead)
      pendingHead = 0
    }
  }

  private func collectFinished() {
    var left: Int32 = 0
    while let message = curl_multi_info_read(multi, &left) {
      guard message.pointee.msg == CURLMSG_DONE, let handle = message.pointee.easy_handle else { continue }
      // Read before removing the handle: that frees the message.
      let code = message.pointee.data.result
      guard let transfer = active.removeValue(forKey: handle) else { continue }
      curl_multi_remove_handle(multi, handle)
      // Counters first: a caller resumed below may read them at once.
      let connects = transfer.connectsMade
      if connects > 0 { connectionsCounter.add(connects, ordering: .relaxed) }
      inFlightCounter.subtract(1, ordering: .relaxed)
      if code != CURLE_OK {
        logger.debug("http request failed", ["curl.code": String(code.rawValue)])
      }
      transfer.finish(code)
    }
  }

  private func cancel(_ id: UInt64) {
    if let (handle, transfer) = active.first(where: { $0.value.id == id }) {
      active[handle] = nil
      curl_multi_remove_handle(multi, handle)
      inFlightCounter.subtract(1, ordering: .relaxed)
      transfer.fail(CancellationError())
      return
    }
    for index in pendingHead..<pending.count where pending[index]?.id == id {
      if let submission = pending[index] { complete(submission.continuation, throwing: CancellationError()) }
      pending[index] = nil
    }
  }

  private func failEverything() {
    for index in pendingHead..<pending.count {
      if let submission = pending[index] {
        complete(submission.continuation, throwing: HTTPClientError.shutDown)
      }
    }
    pending = []
    pendingHead = 0
    for (handle, transfer) in active {
      curl_multi_remove_handle(multi, handle)
      inFlightCounter.subtract(1, ordering: .relaxed)
      transfer.fail(HTTPClientError.shutDown)
    }
    active = [:]
  }

  private func complete(
    _ continuation: CheckedContinuation<HTTPClientResponse, any Error>, throwing error: any Error
  ) {
    inFlightCounter.subtract(1, ordering: .relaxed)
    continuation.resume(throwing: error)
  }

  /// libcurl shortens the wait to its own timers; we shorten it to the next queued deadline.
  private func pollTimeout() -> Int {
    var timeout = 1000
    if pendingHead < pending.count, let first = pending[pendingHead...].first(where: { $0 != nil }),
      let deadline = first?.deadline
    {
      timeout = min(timeout, max(0, CurlTransfer.milliseconds(deadline - .now)) + 1)
    }
    return timeout
  }

  static let queueTimeout = HTTPClientError(
    kind: .timedOut, curlCode: Int(CURLE_OPERATION_TIMEDOUT.rawValue),
    message: "request timed out waiting for a free slot")
}

/// `curl_global_init` runs once per process, the first time a client starts (a lazy static is
/// initialized exactly once, thread-safely).
enum CurlGlobal {
  static let initialized: CURLcode = curl_global_init(GROCER_CURL_GLOBAL_DEFAULT)

  /// libcurl before 8.0.0 (Debian 12 has 7.88.1) breaks a request that reuses an h2c
  /// prior-knowledge connection (curl issue #10634, fixed by curl PR #10643).
  static let priorKnowledgeReuseIsBroken: Bool = {
    guard let info = curl_version_info(GROCER_CURLVERSION_NOW) else { return true }
    return info.pointee.version_num < 0x08_00_00
  }()

  /// libcurl's version text, e.g. "libcurl/7.88.1 OpenSSL/3.0 … nghttp2/1.52.0".
  static var versionText: String { String(cString: curl_version()) }
}
