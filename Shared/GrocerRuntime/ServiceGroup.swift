import Dispatch
import Foundation
import GrocerCore
import Synchronization

/// Runs services as child tasks of one task group, in dependency order (database, broker,
/// consumers, HTTP), and shuts them down one at a time in reverse.
///
/// Each service starts once the one before it signalled readiness, so HTTP takes requests only
/// after what it needs is up. On SIGTERM or SIGINT (or `triggerGracefulShutdown()`) each service
/// in turn is asked to shut down and awaited until its `run()` returns. If a service returns or
/// throws before a shutdown was asked, the others are shut down the same way and `run` throws a
/// `ServiceFailure` naming it, so the process exits non-zero and its supervisor restarts it.
/// Cancelling the task that runs the group cancels every service at once.
public final class ServiceGroup: Sendable {
  private enum Event: Sendable {
    case ready(Int)
    case ended(Int, (any Error)?)
    case shutdownRequested
  }

  private let services: [any Service]
  private let logger: Logger
  /// Whether a shutdown was asked for, and where to say so while the group runs; one lock so a
  /// request racing the start of `run` is never lost.
  private let shutdownState = Mutex<(requested: Bool, events: AsyncStream<Event>.Continuation?)>((false, nil))

  public init(services: [any Service], logger: Logger) {
    self.services = services
    self.logger = logger
  }

  /// Starts the services in order and returns once all of them returned after a graceful
  /// shutdown; throws `ServiceFailure` if one ended on its own.
  public func run(handlingSignals: Bool = true) async throws {
    let (events, sink) = AsyncStream.makeStream(of: Event.self)
    let requestedEarly = shutdownState.withLock { state in
      state.events = sink
      return state.requested
    }
    if requestedEarly { sink.yield(.shutdownRequested) }
    let signals = handlingSignals ? installSignalHandlers() : []
    defer {
      for source in signals { source.cancel() }
      shutdownState.withLock { $0.events = nil }
      sink.finish()
    }
    guard !services.isEmpty else { return }

    let shutdowns = services.map { _ in GracefulShutdown() }
    let failure = await withTaskGroup(of: Void.self) { group -> ServiceFailure? in
      var launched = 0
      var ended = [Bool](repeating: false, count: services.count)
      var shuttingDown = false
      var stopping: Int?
      var failure: ServiceFailure?

      func launch(_ index: Int, in group: inout TaskGroup<Void>) {
        let (service, shutdown) = (services[index], shutdowns[index])
        logger.info("starting service", ["service": service.name])
        group.addTask {
          do {
            try await shutdown.scope {
              try await ServiceReadiness.$current.withValue(ServiceReadiness { sink.yield(.ready(index)) }) {
                try await service.run()
              }
            }
            sink.yield(.ended(index, nil))
          } catch {
            sink.yield(.ended(index, error))
          }
        }
      }

      launch(0, in: &group)
      launched = 1
      for await event in events {
        switch event {
        case .ready(let index):
          guard !shuttingDown, index == launched - 1 else { break }
          if launched < services.count {
            launch(launched, in: &group)
            launched += 1
          } else {
            logger.notice("all services started")
          }
        case .shutdownRequested:
          if !shuttingDown {
            shuttingDown = true
            logger.notice("stopping")
          }
        case .ended(let index, let error):
          ended[index] = true
          let name = services[index].name
          if !shuttingDown {
            failure = Self.failure(of: name, error)
            logger.error("service ended unexpectedly", ["service": name, "error": "\(failure!)"])
            shuttingDown = true
            logger.notice("stopping")
          } else if let error, !(error is CancellationError) {
            logger.error("service failed while stopping", ["service": name, "error": "\(error)"])
            failure = failure ?? Self.failure(of: name, error)
          } else {
            logger.info("service stopped", ["service": name])
          }
        }
        guard shuttingDown else { continue }
        if let current = stopping, !ended[current] { continue }
        // The next one down that still runs; done when none is left.
        guard let next = (0..<launched).reversed().first(where: { !ended[$0] }) else { break }
        stopping = next
        logger.info("stopping service", ["service": services[next].name])
        shutdowns[next].trigger()
      }
      return failure
    }
    if let failure { throw failure }
  }

  /// Asks a running group to shut down (what SIGTERM does); asked before `run`, it shuts down
  /// as soon as it has started.
  public func triggerGracefulShutdown() {
    let events = shutdownState.withLock { state in
      state.requested = true
      return state.events
    }
    events?.yield(.shutdownRequested)
  }

  private static func failure(of name: String, _ error: (any Error)?) -> ServiceFailure {
    error as? ServiceFailure ?? ServiceFailure(service: name, underlying: error)
  }

  private func installSignalHandlers() -> [any DispatchSourceSignal] {
    [SIGTERM, SIGINT].map { number in
      signal(number, SIG_IGN)
      let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
      source.setEventHandler { [weak self] in self?.triggerGracefulShutdown() }
      source.resume()
      return source
    }
  }
}
