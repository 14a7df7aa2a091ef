import GrocerCore
import GrocerRuntime
import Synchronization

/// An HTTP/2 client on libcurl: many requests multiplexed over one connection per host (the
/// APNs provider API wants exactly this).
///
/// One thread of its own runs libcurl's multi loop (`CurlMultiLoop`); `send` queues a request,
/// wakes that thread and suspends until the thread resumes it, so no Swift thread waits on a
/// socket. Requests beyond `maxInFlight` wait in a queue; their time-out runs while they wait.
///
/// ```swift
/// let client = HTTP2Client(
///   configuration: HTTP2ClientConfiguration(baseURL: "https://api.sandbox.push.apple.com"),
///   logger: logger)
/// try await client.start()
/// let response = try await client.send(
///   HTTPClientRequest(method: "POST", path: "/3/device/\(token)", headers: headers, body: payload))
/// await client.shutdown()
/// ```
public final class HTTP2Client: LifecycleService {
  public var name: String { configuration.name }
  public let configuration: HTTP2ClientConfiguration
  private let logger: Logger
  private let state = Mutex<State>(.idle)
  private let nextID = Atomic<UInt64>(0)

  private enum State {
    case idle
    case running(CurlMultiLoop)
    /// Keeps the stopped loop (if it ran) for its counters.
    case stopped(CurlMultiLoop?)
  }

  public init(configuration: HTTP2ClientConfiguration, logger: Logger) {
    self.configuration = configuration
    self.logger = logger.with(["http.client": configuration.name])
  }

  /// Starts the client's thread. Throws if libcurl cannot be initialized; a second call does
  /// nothing, and a client that was shut down cannot be started again.
  public func start() async throws {
    let loop = try state.withLock { state throws(HTTPClientError) -> CurlMultiLoop? in
      guard case .idle = state else { return nil }
      let loop = try CurlMultiLoop(configuration: configuration, logger: logger)
      state = .running(loop)
      return loop
    }
    guard let loop else { return }
    loop.start()
    logger.notice(
      "http client started",
      ["http.base_url": configuration.baseURL, "http.version_mode": "\(configuration.versionMode)"])
  }

  /// Fails every request still queued or in flight with `HTTPClientError.Kind.shutDown`, closes
  /// the connections and stops the thread. Later `send`s fail at once.
  public func shutdown() async {
    let loop = state.withLock { state -> CurlMultiLoop? in
      switch state {
      case .idle:
        state = .stopped(nil)
        return nil
      case .running(let loop):
        state = .stopped(loop)
        return loop
      case .stopped:
        return nil
      }
    }
    guard let loop else { return }
    await loop.stop()
    logger.notice("http client stopped")
  }

  /// Returns when the client's thread has ended (after `shutdown`, or if it ever dies).
  public func finished() async throws {
    let loop = state.withLock { state -> CurlMultiLoop? in
      switch state {
      case .running(let loop), .stopped(let loop?): return loop
      case .idle, .stopped(nil): return nil
      }
    }
    try await loop?.ended.wait()
  }

  /// Sends `request` and returns the whole response, whatever its status.
  ///
  /// Throws `HTTPClientError` (`.timedOut`, `.connectFailed`, `.transferFailed`, `.shutDown`,
  /// `.invalidRequest`), or `CancellationError` if the task is cancelled (the stream is reset).
  public func send(_ request: HTTPClientRequest) async throws -> HTTPClientResponse {
    let loop = try state.withLock { state throws(HTTPClientError) -> CurlMultiLoop in
      switch state {
      case .idle: throw HTTPClientError.notStarted
      case .stopped: throw HTTPClientError.shutDown
      case .running(let loop): return loop
      }
    }
    let id = nextID.add(1, ordering: .relaxed).newValue
    let deadline = ContinuousClock.now + configuration.requestTimeout
    let cancellation = CancellationLink()
    return try await withTaskCancellationHandler {
      try await withCheckedThrowingContinuation { continuation in
        let submission = CurlMultiLoop.Submission(
          id: id, request: request, deadline: deadline, continuation: continuation)
        switch cancellation.submit({ loop.submit(.send(submission)) }) {
        case .submitted: break
        case .cancelled: continuation.resume(throwing: CancellationError())
        case .rejected: continuation.resume(throwing: HTTPClientError.shutDown)
        }
      }
    } onCancel: {
      cancellation.cancel { loop.submit(.cancel(id)) }
    }
  }

  /// Connections opened so far (TCP, and TLS if any): with HTTP/2 multiplexing this stays at
  /// one or two per host however many requests run at once.
  public var connectionsOpened: Int {
    state.withLock { state in
      switch state {
      case .running(let loop), .stopped(.some(let loop)): loop.connectionsOpened
      case .idle, .stopped(.none): 0
      }
    }
  }

  /// Requests sent and not yet answered (queued ones included).
  public var inFlight: Int {
    state.withLock { state in
      switch state {
      case .running(let loop), .stopped(.some(let loop)): loop.inFlight
      case .idle, .stopped(.none): 0
      }
    }
  }
}

/// Orders a request's submission and its cancellation: both happen under one lock, so a cancel
/// command is always queued after the request it cancels, and a request cancelled before it was
/// queued is never queued.
private final class CancellationLink: Sendable {
  enum Outcome { case submitted, cancelled, rejected }
  private let state = Mutex<(submitted: Bool, cancelled: Bool)>((false, false))

  func submit(_ enqueue: () -> Bool) -> Outcome {
    state.withLock { state in
      if state.cancelled { return .cancelled }
      guard enqueue() else { return .rejected }
      state.submitted = true
      return .submitted
    }
  }

  func cancel(_ enqueueCancel: () -> Void) {
    state.withLock { state in
      state.cancelled = true
      if state.submitted { enqueueCancel() }
    }
  }
}
