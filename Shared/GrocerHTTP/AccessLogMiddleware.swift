import GrocerCore
import GrocerRuntime

/// Writes one JSON log line per answered request: request id, method, route, path, status and
/// duration.
///
/// Logs at `.debug` by default so a busy hot path costs nothing unless the logger asks for it;
/// the level check comes before any metadata is built.
public final class AccessLogMiddleware: HTTPMiddleware {
  private let logger: Logger
  private let level: Logger.Level

  public init(logger: Logger, level: Logger.Level = .debug) {
    self.logger = logger
    self.level = level
  }

  public func after(_ request: HTTPRequest, _ response: inout HTTPResponse) {
    guard level >= logger.level else { return }
    let milliseconds = request.startedAt.secondsElapsed * 1000
    logger.log(
      level, "request answered",
      [
        "request.id": request.requestID, "http.method": request.method,
        "http.route": request.route ?? "unmatched", "http.path": request.path,
        "http.status": String(response.status),
        "http.duration_ms": String((milliseconds * 1000).rounded() / 1000),
      ])
  }
}
