import Dispatch
import Foundation
import GrocerCore
import Synchronization

/// A long-running part of a process: the database, the broker connection, the outbox relay,
/// consumers, the HTTP server.
///
/// `start` returns once the part is running; `shutdown` drains what is in flight and stops it.
public protocol LifecycleService: AnyObject, Sendable {
  var name: String { get }
  func start() async throws
  func shutdown() async
}

/// Starts services in dependency order and, on SIGTERM or SIGINT (or `stop()`), shuts them down
/// in reverse order, so HTTP stops taking requests before the broker and database go away.
public final class ServiceGroup: Sendable {
  private let services: [any LifecycleService]
  private let logger: Logger
  /// Whether a stop was asked for, and the waiter to wake; one lock so a stop racing the
  /// start of the wait is never lost.
  private let stopState = Mutex<(requested: Bool, waiter: CheckedContinuation<Void, Never>?)>((false, nil))

  public init(services: [any LifecycleService], logger: Logger) {
    self.services = services
    self.logger = logger
  }

  /// Starts every service, waits for a stop signal, then shuts them down. Returns when all are
  /// stopped. If a service fails to start, the ones already started are shut down and the error
  /// is rethrown.
  public func run(handlingSignals: Bool = true) async throws {
    var started: [any LifecycleService] = []
    do {
      for service in services {
        logger.info("starting service", ["service": service.name])
        try await service.start()
        started.append(service)
      }
    } catch {
      logger.error("service failed to start", ["error": "\(error)"])
      for service in started.reversed() { await service.shutdown() }
      throw error
    }
    logger.notice("all services started")
    let signals = handlingSignals ? installSignalHandlers() : []
    await waitForStop()
    logger.notice("stopping")
    for service in started.reversed() {
      await service.shutdown()
      logger.info("service stopped", ["service": service.name])
    }
    for source in signals { source.cancel() }
  }

  /// Asks a running group to stop (what SIGTERM does).
  public func stop() {
    let waiter = stopState.withLock { state -> CheckedContinuation<Void, Never>? in
      state.requested = true
      defer { state.waiter = nil }
      return state.waiter
    }
    waiter?.resume()
  }

  private func waitForStop() async {
    await withCheckedContinuation { continuation in
      let resumeNow = stopState.withLock { state -> Bool in
        if state.requested { return true }
        state.waiter = continuation
        return false
      }
      if resumeNow { continuation.resume() }
    }
  }

  private func installSignalHandlers() -> [any DispatchSourceSignal] {
    [SIGTERM, SIGINT].map { number in
      signal(number, SIG_IGN)
      let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
      source.setEventHandler { [weak self] in self?.stop() }
      source.resume()
      return source
    }
  }
}
