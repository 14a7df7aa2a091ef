import Foundation
import GrocerCore
import GrocerRuntime
import NotifyGateway

/// `notify-gateway` runs the service (pushes go to the built-in APNs simulator, or to APNs over
/// HTTP/2 with GROCER_APNS_TRANSPORT=http2). It reads GROCER_DATA_DIR, GROCER_AMQP_URL,
/// GROCER_HTTP_PORT, GROCER_JWT_SECRET, GROCER_APNS_BUNDLE_ID, GROCER_PUSH_HOURLY_BUDGET, … (see
/// README.md). `notify-gateway apns-simulator` runs the APNs simulator alone as an HTTP server
/// (GROCER_HTTP_PORT, default 8086; GROCER_APNS_SIM_PUBLIC_KEY, GROCER_APNS_KEY_ID,
/// GROCER_APNS_TEAM_ID).
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
case "apns-simulator":
  do {
    let server = try APNsSimulatorServer(configuration: configuration, logger: logger)
    try await server.run(logger: logger)
  } catch {
    logger.error("apns-simulator failed", ["error": "\(error)"])
    exit(1)
  }
default:
  FileHandle.standardError.write(
    Data("usage: notify-gateway [serve | apns-simulator]  (the push load tool is `grocer load push`)\n".utf8))
  exit(2)
}
