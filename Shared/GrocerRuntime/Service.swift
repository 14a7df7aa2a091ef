/// A long-running part of a process, run by `ServiceGroup`: `run()` is its work and returns
/// only when it is done.
///
/// `run()` returns after a graceful shutdown (see `gracefulShutdown()`); returning or throwing
/// before one was asked means the part died, and the group ends the process. A part that others
/// must wait for (a connection, a bound port) calls `ServiceReadiness.signal()` once it is ready:
/// the group starts the next part only then.
public protocol Service: Sendable {
  var name: String { get }
  func run() async throws
}

/// Why a `ServiceGroup` ended on its own: a part's `run()` returned or threw before shutdown.
public struct ServiceFailure: Error, CustomStringConvertible {
  /// The part's name.
  public let service: String
  /// What it threw; nil when it returned.
  public let underlying: (any Error)?

  public init(service: String, underlying: (any Error)?) {
    self.service = service
    self.underlying = underlying
  }

  public var description: String {
    if let underlying { return "service \(service) failed: \(underlying)" }
    return "service \(service) ended unexpectedly"
  }
}

/// How a running service tells its group that it is ready for the parts after it.
public final class ServiceReadiness: Sendable {
  /// A class, not a closure: a task-local of function type crashes optimized builds
  /// (swift_task_localValuePush) when bound inside a task group's child.
  @TaskLocal static var current: ServiceReadiness?

  private let ready: @Sendable () -> Void

  init(_ ready: @escaping @Sendable () -> Void) { self.ready = ready }

  /// Lets the group start the next service. Does nothing outside a group or when called again.
  public static func signal() { current?.ready() }
}
