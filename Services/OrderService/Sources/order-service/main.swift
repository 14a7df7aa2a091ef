import Foundation
import GrocerAuth
import GrocerCore
import GrocerRuntime
import OrderService

/// `order-service` runs the service; `order-service sign-payment-event <paymentId> <body>` prints the
/// `Grocer-Signature` header a payment callback with that body needs (for trying 3-D Secure
/// locally with curl). Both read GROCER_DATA_DIR, GROCER_AMQP_URL, GROCER_HTTP_PORT,
/// GROCER_JWT_SECRET, GROCER_PAYMENT_WEBHOOK_SECRET, … (see README.md).
let settings = Settings()
let logger = Logger(
  label: "order-service",
  level: Logger.Level(name: settings.string("GROCER_LOG_LEVEL", default: "info")) ?? .info)
let configuration = OrderServiceConfiguration(settings: settings)
let arguments = Array(CommandLine.arguments.dropFirst())

switch arguments.first {
case nil, "serve":
  do {
    let app = try buildOrderService(configuration: configuration, logger: logger)
    try await app.run(logger: logger)
  } catch {
    logger.error("order-service failed", ["error": "\(error)"])
    exit(1)
  }
case "sign-payment-event" where arguments.count == 3:
  let signature = WebhookSignature(secret: configuration.webhookSecret)
  print(
    "\(WebhookSignature.header): " + signature.sign(Array(arguments[2].utf8), for: arguments[1], at: Date()))
default:
  FileHandle.standardError.write(
    Data("usage: order-service [serve | sign-payment-event <paymentId> '<json body>']\n".utf8))
  exit(2)
}
