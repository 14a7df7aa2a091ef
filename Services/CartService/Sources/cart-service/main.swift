import CartService
import Foundation
import GrocerCore
import GrocerRuntime

/// `cart-service` runs the service; `cart-service load-demo` defines the demo promo codes
/// (SPRING, WELCOME5, H1ONLY) and exits. Both read GROCER_DATA_DIR, GROCER_AMQP_URL,
/// GROCER_HTTP_PORT, GROCER_JWT_SECRET, … (see README.md).
let settings = Settings()
let logger = Logger(
  label: "cart-service",
  level: Logger.Level(name: settings.string("GROCER_LOG_LEVEL", default: "info")) ?? .info)
let configuration = CartServiceConfiguration(settings: settings)

switch CommandLine.arguments.dropFirst().first {
case nil, "serve":
  do {
    let app = try buildCartService(configuration: configuration, logger: logger)
    try await app.run(logger: logger)
  } catch {
    logger.error("cart-service failed", ["error": "\(error)"])
    exit(1)
  }
case "load-demo":
  do {
    let created = try loadDemoPromotions(configuration: configuration, logger: logger)
    print("demo promo codes defined: \(created)")
  } catch {
    logger.error("cart-service load-demo failed", ["error": "\(error)"])
    exit(1)
  }
default:
  FileHandle.standardError.write(Data("usage: cart-service [serve | load-demo]\n".utf8))
  exit(2)
}
