import Foundation
import GrocerCore
import GrocerRuntime
import StockService

/// `stock-service` runs the service; `stock-service load-demo` loads the demo assortment into
/// the data directory (hubs h1–h3, 3,000 products each, `GROCER_DEMO_PRODUCTS`) and exits; `stock-service
/// demo-images DIR` draws the demo catalogue's placeholder images into DIR (the gateway serves
/// them as `/images/`). They read the same environment (GROCER_DATA_DIR, GROCER_AMQP_URL,
/// GROCER_HTTP_PORT, GROCER_JWT_SECRET, …).
let settings = Settings()
let logger = Logger(
  label: "stock-service",
  level: Logger.Level(name: settings.string("GROCER_LOG_LEVEL", default: "info")) ?? .info)
let configuration = StockServiceConfiguration(settings: settings)
let arguments = CommandLine.arguments.dropFirst()

do {
  switch arguments.first {
  case nil, "serve":
    let app = try buildStockService(configuration: configuration, logger: logger)
    try await app.run(logger: logger)
  case "load-demo":
    let loaded = try loadDemoAssortment(configuration: configuration, logger: logger)
    print(loaded ? "demo assortment loaded" : "demo assortment already present")
  case "demo-images":
    guard let directory = arguments.dropFirst().first else {
      FileHandle.standardError.write(Data("usage: stock-service demo-images DIR\n".utf8))
      exit(2)
    }
    let count = try PlaceholderImages.write(to: URL(fileURLWithPath: directory, isDirectory: true))
    print("\(count) demo images in \(directory)")
  default:
    FileHandle.standardError.write(Data("usage: stock-service [serve | load-demo | demo-images DIR]\n".utf8))
    exit(2)
  }
} catch {
  logger.error("stock-service failed", ["error": "\(error)"])
  exit(1)
}
