import Foundation
import GrocerCore
import GrocerRuntime
import TrackingService

/// `tracking-service` runs the service. It reads GROCER_DATA_DIR, GROCER_AMQP_URL,
/// GROCER_HTTP_PORT, GROCER_JWT_SECRET, … (docs/configuration.md). The simulator and the
/// benchmark's seed are `grocer simulate` and `grocer seed-bench tracking`.
let settings = Settings()
let logger = Logger(
  label: "tracking-service",
  level: Logger.Level(name: settings.string("GROCER_LOG_LEVEL", default: "info")) ?? .info)
let configuration = TrackingServiceConfiguration(settings: settings)

switch CommandLine.arguments.dropFirst().first {
case nil, "serve":
  do {
    let app = try buildTrackingService(configuration: configuration, logger: logger)
    try await app.run(logger: logger)
  } catch {
    logger.error("tracking-service failed", ["error": "\(error)"])
    exit(1)
  }
default:
  FileHandle.standardError.write(Data("usage: tracking-service [serve]\n".utf8))
  exit(2)
}
