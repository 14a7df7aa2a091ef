import Foundation
import GrocerContracts
import GrocerCore
import GrocerRuntime

/// Everything OrderService reads from its environment, with working local defaults.
public struct OrderServiceConfiguration: Sendable {
  /// Name used as the log label and the broker connections' names.
  public var serviceName = "order-service"
  public var dataDirectory: String
  public var jwtSecret: String
  /// The secret the payment provider signs its callbacks with.
  public var webhookSecret: String
  /// The queue CartService answers checkout questions on.
  public var cartCheckoutQueue = CartCheckoutQueue.name
  /// The queue StockService answers reservations on.
  public var reservationQueue = ReservationQueue.name
  /// How long a question to CartService or StockService may take.
  public var remoteTimeout: TimeInterval = 3
  /// How long one call to the payment provider may take before its outcome counts as unknown.
  public var paymentTimeout: TimeInterval = 5
  /// How long `POST /v1/orders` waits for the saga before answering 202 `pending`.
  public var requestDeadline: TimeInterval = 8
  /// How long a 3-D Secure check may take before the payment is cancelled (keep it under
  /// StockService's reservation time-out, 10 minutes by default).
  public var actionTimeout: TimeInterval = 8 * 60
  /// How long a charge may stay without verdict before it is cancelled at the provider.
  public var paymentGiveUp: TimeInterval = 15 * 60
  /// How long idempotency keys and their answers are kept.
  public var keyRetention: TimeInterval = 24 * 3600
  /// How often unfinished orders are looked for and carried on.
  public var recoveryInterval: TimeInterval = 1
  /// How long the simulated provider takes to answer a `sim-timeout` charge.
  public var simulatorHang: TimeInterval = 30
  /// Where the simulated provider keeps its ledger (a database apart from the service's).
  public var simulatorDatabasePath: String
  /// This replica's name, the driver of the orders it claims: give every replica its own and
  /// keep it across restarts (a restarted replica takes its orders back at once).
  public var replicaID: String
  /// A fault drill: kill the process at this point of the saga (never set in production).
  public var fault: SagaFault?
  public var settings: Settings

  public init(settings: Settings = Settings()) {
    self.settings = settings
    serviceName = settings.string("GROCER_SERVICE_NAME", default: serviceName)
    dataDirectory = settings.string("GROCER_DATA_DIR", default: "var/data/order")
    jwtSecret = settings.string("GROCER_JWT_SECRET", default: Settings.localJWTSecret)
    webhookSecret = settings.string("GROCER_PAYMENT_WEBHOOK_SECRET", default: Self.localWebhookSecret)
    cartCheckoutQueue = settings.string("GROCER_CART_CHECKOUT_QUEUE", default: cartCheckoutQueue)
    reservationQueue = settings.string("GROCER_RESERVATION_QUEUE", default: reservationQueue)
    remoteTimeout = max(0.05, settings.double("GROCER_REMOTE_TIMEOUT", default: remoteTimeout))
    paymentTimeout = max(0.05, settings.double("GROCER_PAYMENT_TIMEOUT", default: paymentTimeout))
    requestDeadline = max(0.05, settings.double("GROCER_ORDER_REQUEST_DEADLINE", default: requestDeadline))
    actionTimeout = max(1, settings.double("GROCER_PAYMENT_ACTION_TIMEOUT", default: actionTimeout))
    paymentGiveUp = max(1, settings.double("GROCER_PAYMENT_GIVE_UP", default: paymentGiveUp))
    keyRetention = max(60, settings.double("GROCER_IDEMPOTENCY_RETENTION", default: keyRetention))
    recoveryInterval = max(0.05, settings.double("GROCER_RECOVERY_INTERVAL", default: recoveryInterval))
    simulatorHang = max(0, settings.double("GROCER_PAYMENT_SIM_HANG", default: simulatorHang))
    simulatorDatabasePath = settings.string(
      "GROCER_PAYMENT_SIM_DB", default: dataDirectory + "/payment-simulator.sqlite")
    fault = SagaFault(rawValue: settings.string("GROCER_FAULT_CRASH_AT", default: ""))
    replicaID = settings.string(
      "GROCER_REPLICA_ID", default: "\(ProcessInfo.processInfo.hostName)/\(serviceName)")
  }

  /// This replica's claim on the orders it drives: twice the longest call one step makes, and
  /// the grace a new order is left to its request's drive.
  public var driveLease: DriveLease {
    DriveLease(
      driver: replicaID, duration: 2 * max(paymentTimeout, remoteTimeout) + CheckoutPolicy.recoveryGrace)
  }

  /// The local default of `GROCER_PAYMENT_WEBHOOK_SECRET` (documented; change it anywhere real).
  public static let localWebhookSecret = "grocer-local-payment-webhook-secret"

  var databasePath: String { dataDirectory + "/order.sqlite" }
}
