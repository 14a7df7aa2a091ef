import GrocerCore

/// A part driven by `start` and `shutdown` (how tests drive it in-process) whose `run()` is
/// built on them: start, signal readiness, then wait for a graceful shutdown or for the part's
/// own work to end, whichever comes first.
///
/// `start` returns once the part is ready to be used (connected, listening); `shutdown` drains
/// what is in flight and stops it; `finished` returns when the part's work (its loop, thread or
/// daemon) has ended, throwing what ended it. Work that ends before a shutdown was asked makes
/// `run()` throw a `ServiceFailure`, after the rest of the part is shut down.
public protocol LifecycleService: Service, AnyObject {
  func start() async throws
  func shutdown() async
  func finished() async throws
}

extension LifecycleService {
  public func run() async throws {
    try await start()
    ServiceReadiness.signal()
    let ending = await withTaskGroup(of: LifecycleEnding.self) { group in
      group.addTask {
        do {
          try await self.finished()
          return .workEnded(nil)
        } catch {
          return .workEnded(error)
        }
      }
      group.addTask {
        do {
          try await gracefulShutdown()
          return .shutdownAsked
        } catch {
          return .cancelled
        }
      }
      let first = await group.next() ?? .cancelled
      group.cancelAll()
      return Task.isCancelled ? .cancelled : first
    }
    await shutdown()
    switch ending {
    case .shutdownAsked: return
    case .workEnded where isShuttingDownGracefully: return
    case .cancelled: throw CancellationError()
    case .workEnded(let error): throw ServiceFailure(service: name, underlying: error)
    }
  }
}

/// What ended a `LifecycleService`'s `run()`.
private enum LifecycleEnding: Sendable {
  case workEnded((any Error)?)
  case shutdownAsked
  case cancelled
}
