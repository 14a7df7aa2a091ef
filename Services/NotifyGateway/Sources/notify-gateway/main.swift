import Foundation
import GrocerCore
import NotifyGateway

/// `notify-gateway` runs the service (pushes go to the built-in APNs simulator). It reads
/// GROCER_DATA_DIR, GROCER_AMQP_URL, GROCER_HTTP_PORT, GROCER_JWT_SECRET, GROCER_APNS_BUNDLE_ID,
/// GROCER_PUSH_HOURLY_BUDGET, … (see README.md).
let settings = Settings()
let logger = Logger(
  label: "notify-gateway",
  level: Logger.Level(name: settings.string("GROCER_LOG_LEVEL", default: "info")) ?? .info)
let configuration = NotifyGatewayConfiguration(settings: settings)

switch CommandLine.arguments.dropFirst().first {
case nil, "serve":
  do {
    let app = try buildNotifyGateway(configuration: configuration, logger: logger)
    try await app.run(logger: logger)
  } catch {
    logger.error("notify-gateway failed", ["error": "\(error)"])
    exit(1)
  }
default:
  FileHandle.standardError.write(Data("usage: notify-gateway [serve]\n".utf8))
  exit(2)
}
