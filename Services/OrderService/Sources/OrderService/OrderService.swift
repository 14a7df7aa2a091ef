import Foundation
import GrocerAMQP
import GrocerAuth
import GrocerCore
import GrocerDatabase
import GrocerHTTP
import GrocerHTTPServer
import GrocerRabbitMQ
import GrocerRuntime
import GrocerStorage

/// A wired OrderService: its HTTP responder (for in-process tests) and the long-running parts in
/// start order (for `ServiceGroup`).
public struct OrderServiceApp: Sendable {
  public let router: Router
  public let store: OrderStore
  public let saga: CheckoutSaga
  public let payments: any PaymentProvider
  public let http: HTTPServer
  /// Relay, broker connections, recovery and HTTP, in the order they start.
  public let services: [any LifecycleService]
  public let metrics: MetricsRegistry

  /// Runs until SIGTERM/SIGINT, then drains HTTP, recovery and the relay, in reverse order.
  public func run(logger: Logger) async throws {
    try await ServiceGroup(services: services, logger: logger).run()
  }
}

/// The composition root: builds every part of OrderService from its configuration.
///
/// Tests call it with a temporary data directory, a manual clock and sequential ids; `payments`
/// replaces the built-in simulator (a real provider's adapter goes there).
public func buildOrderService(
  configuration: OrderServiceConfiguration, logger: Logger, clock: any WallClock = SystemClock(),
  ids: any IDGenerator = TimeOrderedIDs(), metrics: MetricsRegistry = MetricsRegistry(),
  payments: (any PaymentProvider)? = nil
) throws -> OrderServiceApp {
  // Money and idempotency: every commit is on disk before anyone is answered.
  let database = try DatabaseLocation(
    settings: configuration.settings, sqlitePath: configuration.databasePath
  )
  .open(migrations: OrderSchema.migrations, durability: .full, logger: logger)
  let store = OrderStore(
    database: database, clock: clock, ids: ids, keyRetention: configuration.keyRetention,
    lease: configuration.driveLease)
  let provider =
    try payments
    ?? SimulatedPaymentProvider(
      location: DatabaseLocation(
        settings: configuration.settings, key: "GROCER_PAYMENT_SIM_DATABASE_URL",
        sqlitePath: configuration.simulatorDatabasePath),
      clock: clock, ids: TimeOrderedIDs(), hang: configuration.simulatorHang, logger: logger)

  let amqp = AMQPConfiguration(settings: configuration.settings, connectionName: configuration.serviceName)
  let publisher = AMQPPublisher(
    configuration: amqp.named("\(configuration.serviceName)-publisher"), logger: logger, metrics: metrics)
  let relay = OutboxRelay(database: database, publisher: publisher, logger: logger, metrics: metrics)
  let rpcClient = AMQPRPCClient(
    configuration: amqp.named("\(configuration.serviceName)-checkout"), logger: logger,
    name: "checkout-client")
  let clients = BrokerCheckoutClients(
    client: rpcClient, cartQueue: configuration.cartCheckoutQueue,
    reservationQueue: configuration.reservationQueue,
    timeout: .milliseconds(Int(configuration.remoteTimeout * 1000)))

  // The time limits of placing requests and payment calls.
  let deadlines = Deadlines()
  let saga = CheckoutSaga(
    store: store, clients: clients, payments: provider, clock: clock, logger: logger,
    paymentTimeout: .milliseconds(Int(configuration.paymentTimeout * 1000)),
    actionTimeout: configuration.actionTimeout, paymentGiveUp: configuration.paymentGiveUp,
    deadlines: deadlines, fault: configuration.fault, metrics: metrics)
  let recovery = PeriodicTask(
    name: "checkout-recovery", interval: .milliseconds(Int(configuration.recoveryInterval * 1000)),
    logger: logger
  ) {
    try await saga.recover()
  }
  let keyPurge = PeriodicTask(name: "idempotency-key-purge", interval: .seconds(600), logger: logger) {
    let removed = try await database.onWriterQueue { try store.purgeExpiredKeys() }
    if removed > 0 { logger.info("expired idempotency keys purged", ["keys": "\(removed)"]) }
  }

  let verifier = HS256Verifier(secret: configuration.jwtSecret, clock: clock)
  var router = Router(verifier: verifier, metrics: metrics, logger: logger)
  router.add(
    OrderController(
      store: store, saga: saga, payments: provider,
      webhook: WebhookSignature(secret: configuration.webhookSecret), clock: clock,
      requestDeadline: .milliseconds(Int(configuration.requestDeadline * 1000)), deadlines: deadlines
    ).routes)
  try router.addOpenAPIDocument(PackageResources.openapi_json)
  let broker = BrokerConnections([publisher, rpcClient])
  router.addOperationalRoutes(registry: metrics, brokerNodes: { broker.nodes }) {
    ["database": database.isReachable(), "broker": broker.areConnected]
  }
  let http = HTTPServer(
    configuration: HTTPServerConfiguration(settings: configuration.settings, defaultPort: 8083),
    responder: router, logger: logger)

  return OrderServiceApp(
    router: router, store: store, saga: saga, payments: provider, http: http,
    // Shut down in reverse: HTTP, the sweepers, then the drives under way, then the broker.
    services: [publisher, relay, rpcClient, CheckoutDrain(saga: saga), recovery, keyPurge, http],
    metrics: metrics
  )
}
