import Foundation
import GrocerCore
import TrackingService

/// `tracking-service` runs the service; `tracking-service simulate …` drives orders from placed
/// to delivered through the public API (see `SimulatorCommand.usage`); `tracking-service
/// seed-bench …` creates synthetic tracked orders for `Benchmarks/tracking` (see
/// `BenchSeed.usage`). All read GROCER_DATA_DIR, GROCER_AMQP_URL, GROCER_HTTP_PORT,
/// GROCER_JWT_SECRET, … (see README.md).
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
case "simulate":
  do {
    let options = try SimulatorCommand.parse(Array(CommandLine.arguments.dropFirst(2)), settings: settings)
    print("simulating \(options.orders) orders at \(options.baseURL) (speed-up \(options.speedup))…")
    let report = await TrackingSimulator(options: options, logger: logger).run()
    print(report)
    exit(report.failures.isEmpty ? 0 : 1)
  } catch {
    FileHandle.standardError.write(Data("\(error)\n\n\(SimulatorCommand.usage)\n".utf8))
    exit(2)
  }
case "seed-bench":
  do {
    let options = try BenchSeed.parse(Array(CommandLine.arguments.dropFirst(2)))
    let (created, lines) = try BenchSeed.run(options, configuration: configuration, logger: logger)
    print(lines.joined(separator: "\n"))
    FileHandle.standardError.write(Data("seed-bench: \(created) of \(lines.count) orders created\n".utf8))
  } catch let error as BenchSeed.UsageError {
    FileHandle.standardError.write(Data("\(error)\n\n\(BenchSeed.usage)\n".utf8))
    exit(2)
  } catch {
    logger.error("seed-bench failed", ["error": "\(error)"])
    exit(1)
  }
default:
  FileHandle.standardError.write(
    Data("usage: tracking-service [serve | simulate … | seed-bench …]\n\n\(SimulatorCommand.usage)\n".utf8))
  exit(2)
}
