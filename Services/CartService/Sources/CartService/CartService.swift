import Foundation
import GrocerAMQP
import GrocerAuth
import GrocerContracts
import GrocerCore
import GrocerDatabase
import GrocerHTTP
import GrocerHTTPServer
import GrocerRabbitMQ
import GrocerRuntime
import GrocerStorage

/// A wired CartService: its HTTP responder (for in-process tests) and the long-running parts in
/// start order (for `ServiceGroup`).
public struct CartServiceApp: Sendable {
  public let router: Router
  public let store: CartStore
  /// The cart's use cases, which the controller and the consumers call.
  public let commands: CartCommands
  public let http: HTTPServer
  /// Database relay, broker connections, consumers, sweepers and HTTP, in the order they start.
  public let services: [any LifecycleService]
  public let metrics: MetricsRegistry

  /// Runs until SIGTERM/SIGINT, then drains HTTP, consumers and the relay, in reverse order.
  public func run(logger: Logger) async throws {
    try await ServiceGroup(services: services, logger: logger).run()
  }
}

/// The composition root: builds every part of CartService from its configuration.
///
/// Tests call it with a temporary data directory, a manual clock and sequential ids.
public func buildCartService(
  configuration: CartServiceConfiguration, logger: Logger, clock: any WallClock = SystemClock(),
  ids: any IDGenerator = TimeOrderedIDs(), metrics: MetricsRegistry = MetricsRegistry()
) throws -> CartServiceApp {
  let database = try DatabaseLocation(
    settings: configuration.settings, sqlitePath: configuration.databasePath
  )
  .open(migrations: CartSchema.migrations, logger: logger)
  let store = CartStore(database: database)
  // Replies are remembered only by a process that makes every write to its database.
  let commands = CartCommands(
    store: store, clock: clock, ids: ids, checkoutHold: configuration.checkoutHold,
    publishesChanges: configuration.publishesCartChanges,
    replies: CartReplyCache(remembers: !database.mayHaveOtherWriters))

  let amqp = AMQPConfiguration(settings: configuration.settings, connectionName: configuration.serviceName)
  let publisher = AMQPPublisher(
    configuration: amqp.named("\(configuration.serviceName)-publisher"), logger: logger, metrics: metrics)
  let relay = OutboxRelay(database: database, publisher: publisher, logger: logger, metrics: metrics)

  let events = CartEventHandler(commands: commands, consumer: configuration.serviceName, logger: logger)
  let consumer = AMQPConsumer(
    configuration: amqp.named("\(configuration.serviceName)-events"),
    queue: QueueSpec(
      name: configuration.serviceName, bindingKeys: CartEventHandler.bindingKeys,
      kind: .durableQuorum(expiresAfter: configuration.queueExpiry.map { .milliseconds(Int($0 * 1000)) })),
    prefetch: 200, maximumBatch: 100, logger: logger, metrics: metrics, batchHandler: events.handle)

  let checkout = CheckoutResponder(commands: commands, logger: logger)
  let rpcServer = AMQPRPCServer(
    configuration: amqp.named("\(configuration.serviceName)-checkout"), queue: configuration.checkoutQueue,
    concurrency: 16, logger: logger, handler: checkout.handle)

  let rpcClient = AMQPRPCClient(
    configuration: amqp.named("\(configuration.serviceName)-catalogue"), logger: logger,
    name: "catalogue-client")
  let sync = CatalogueSync(
    commands: commands, client: rpcClient, queue: configuration.catalogueQueue,
    timeout: .milliseconds(Int(configuration.catalogueTimeout * 1000)), logger: logger)

  let sweeper = PeriodicTask(
    name: "promo-sweeper", interval: .milliseconds(Int(configuration.promoSweepInterval * 1000)),
    logger: logger
  ) {
    let removed = try await runBlocking { try commands.removeExpiredPromotions() }
    if removed > 0 { logger.info("expired promo codes removed from carts", ["carts": "\(removed)"]) }
  }
  let inboxPurge = PeriodicTask(name: "inbox-purge", interval: .seconds(3600), logger: logger) {
    _ = try await runBlocking { try commands.purgeInbox() }
  }

  let verifier = HS256Verifier(secret: configuration.jwtSecret, clock: clock)
  var router = Router(verifier: verifier, metrics: metrics, logger: logger)
  router.add(CartController(commands: commands, clock: clock, fillHub: { await sync.fillHub($0) }).routes)
  try router.addOpenAPIDocument(PackageResources.openapi_json)
  let broker = BrokerConnections([publisher, consumer, rpcServer])
  router.addOperationalRoutes(registry: metrics, brokerNodes: { broker.nodes }) {
    ["database": database.isReachable(), "broker": broker.areConnected]
  }
  let http = HTTPServer(
    configuration: HTTPServerConfiguration(settings: configuration.settings, defaultPort: 8082),
    responder: router, logger: logger)

  return CartServiceApp(
    router: router, store: store, commands: commands, http: http,
    services: [publisher, relay, consumer, rpcServer, rpcClient, sync, sweeper, inboxPurge, http],
    metrics: metrics)
}

/// Defines the demo promo codes in the service's database (their `cart.changed` events, if any
/// cart held an older definition and changes are published, wait in the outbox). Returns how
/// many were new.
public func loadDemoPromotions(
  configuration: CartServiceConfiguration, logger: Logger, clock: any WallClock = SystemClock()
) throws -> Int {
  let database = try DatabaseLocation(
    settings: configuration.settings, sqlitePath: configuration.databasePath
  )
  .open(migrations: CartSchema.migrations, logger: logger)
  defer { database.close() }
  let commands = CartCommands(
    store: CartStore(database: database), clock: clock, ids: TimeOrderedIDs(),
    publishesChanges: configuration.publishesCartChanges)
  return try Promotion.demo.filter { try commands.upsertPromotion($0, correlationID: nil) }.count
}
