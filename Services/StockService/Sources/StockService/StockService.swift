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

/// A wired StockService: its HTTP responder (for in-process tests) and the long-running parts
/// in start order (for `ServiceGroup`).
public struct StockServiceApp: Sendable {
  public let router: Router
  public let store: StockStore
  /// The use cases, for tools and tests that change stock in-process.
  public let commands: StockCommands
  public let cache: StockCache
  public let http: HTTPServer
  /// Database relay, broker connections, consumers and HTTP, in the order they start.
  public let services: [any LifecycleService]
  public let metrics: MetricsRegistry

  /// Runs until SIGTERM/SIGINT, then drains HTTP, consumers and the relay, in reverse order.
  public func run(logger: Logger) async throws {
    try await ServiceGroup(services: services, logger: logger).run()
  }
}

/// The composition root: builds every part of StockService from its configuration.
///
/// Tests call it with a temporary data directory, a manual clock and sequential ids.
public func buildStockService(
  configuration: StockServiceConfiguration, logger: Logger, clock: any WallClock = SystemClock(),
  ids: any IDGenerator = TimeOrderedIDs(), metrics: MetricsRegistry = MetricsRegistry()
) throws -> StockServiceApp {
  let database = try DatabaseLocation(
    settings: configuration.settings, sqlitePath: configuration.databasePath
  )
  .open(migrations: StockSchema.migrations, logger: logger)
  let store = StockStore(database: database)
  let commands = StockCommands(
    store: store, clock: clock, ids: ids, reservationTTL: configuration.reservationTTL, logger: logger)
  let cache = StockCache(timeToLive: configuration.cacheTTL)
  let catalogue = CatalogueMemory()
  let hubs = HubDirectory()
  // Without the database (PostgreSQL not up yet) the directory starts empty: a hub it does not
  // hold is asked of the database before a 404, so nothing is refused that exists.
  do { hubs.replace(with: try store.hubIDs()) } catch {
    logger.warning("hubs not read at start; each is read when first asked for", ["error": "\(error)"])
  }

  let amqp = AMQPConfiguration(settings: configuration.settings, connectionName: configuration.serviceName)
  let publisher = AMQPPublisher(
    configuration: amqp.named("\(configuration.serviceName)-publisher"), logger: logger, metrics: metrics)
  let relay = OutboxRelay(
    database: database, publisher: publisher, logger: logger, metrics: metrics,
    failsAfterFirstPass: configuration.relayDies)

  let outcomes = OrderOutcomeHandler(
    commands: commands, cache: cache, consumer: configuration.serviceName, logger: logger)
  let outcomeConsumer = AMQPConsumer(
    configuration: amqp.named("\(configuration.serviceName)-orders"),
    queue: QueueSpec(
      name: configuration.serviceName, bindingKeys: StockEventType.orderOutcomes,
      kind: .durableQuorum(expiresAfter: configuration.queueExpiry.map { .milliseconds(Int($0 * 1000)) })),
    logger: logger, metrics: metrics, handler: outcomes.handle, failsAfterStart: configuration.consumerDies)

  let invalidation = CacheInvalidationHandler(cache: cache, catalogue: catalogue, hubs: hubs, logger: logger)
  let cacheConsumer = AMQPConsumer(
    configuration: amqp.named("\(configuration.serviceName)-cache"),
    queue: QueueSpec(
      name: "\(configuration.serviceName).cache.\(configuration.replicaID)",
      bindingKeys: [StockEventType.stockChanged, StockEventType.hubChanged, StockEventType.catalogueChanged],
      kind: .transient),
    prefetch: 500, maximumBatch: 500, logger: logger, metrics: metrics,
    batchHandler: { deliveries in
      var dispositions: [AMQPDisposition] = []
      for delivery in deliveries { dispositions.append(await invalidation.handle(delivery)) }
      return dispositions
    },
    onConnected: {
      // Events sent while this replica was not listening are lost to it: start cold.
      cache.removeAll()
      catalogue.removeAll()
      logger.info("stock and catalogue caches emptied after (re)connecting to the broker")
    })

  let reservations = ReservationResponder(commands: commands, cache: cache, logger: logger)
  let rpcServer = AMQPRPCServer(
    configuration: amqp.named("\(configuration.serviceName)-reservations"),
    queue: configuration.reservationQueue, concurrency: 16, logger: logger, handler: reservations.handle)
  let catalogueResponder = CatalogueResponder(commands: commands, logger: logger)
  let catalogueServer = AMQPRPCServer(
    configuration: amqp.named("\(configuration.serviceName)-catalogue"),
    queue: configuration.catalogueQueue, prefetch: 4, logger: logger, handler: catalogueResponder.handle)

  // Releases reservations whose order outcome never arrived.
  let sweeper = PeriodicTask(
    name: "reservation-sweeper", interval: .milliseconds(Int(configuration.reservationSweepInterval * 1000)),
    logger: logger
  ) {
    let movements = try await runBlocking { try commands.releaseExpired() }
    cache.apply(movements)
    if !movements.isEmpty { logger.info("expired reservations released", ["count": "\(movements.count)"]) }
  }
  let inboxPurge = PeriodicTask(name: "inbox-purge", interval: .seconds(3600), logger: logger) {
    _ = try await runBlocking { try commands.purgeInbox() }
  }

  let verifier = HS256Verifier(secret: configuration.jwtSecret, clock: clock)
  var router = Router(verifier: verifier, metrics: metrics, logger: logger)
  router.add(
    StockController(
      commands: commands, cache: cache, catalogue: catalogue,
      cursors: PageCursorCodec(
        authenticator: MessageAuthenticator(secret: configuration.jwtSecret, purpose: "grocer page cursor v1")
      ),
      hubs: hubs, clock: clock, logger: logger, defaultHub: configuration.defaultHub
    ).routes)
  try router.addOpenAPIDocument(PackageResources.openapi_json)
  let broker = BrokerConnections([publisher, outcomeConsumer, cacheConsumer, rpcServer, catalogueServer])
  router.addOperationalRoutes(registry: metrics, brokerNodes: { broker.nodes }) {
    ["database": database.isReachable(), "broker": broker.areConnected]
  }
  let http = HTTPServer(
    configuration: HTTPServerConfiguration(settings: configuration.settings, defaultPort: 8081),
    responder: router, logger: logger)

  return StockServiceApp(
    router: router, store: store, commands: commands, cache: cache, http: http,
    services: [
      publisher, relay, outcomeConsumer, cacheConsumer, rpcServer, catalogueServer, sweeper, inboxPurge, http,
    ],
    metrics: metrics)
}

/// Loads the demo assortment into the service's database unless it is there already; its
/// `hub.changed`/`stock.changed` events wait in the outbox until the service runs.
public func loadDemoAssortment(
  configuration: StockServiceConfiguration, logger: Logger, clock: any WallClock = SystemClock(),
  ids: any IDGenerator = TimeOrderedIDs()
) throws -> Bool {
  let database = try DatabaseLocation(
    settings: configuration.settings, sqlitePath: configuration.databasePath
  )
  .open(migrations: StockSchema.migrations, logger: logger)
  defer { database.close() }
  let commands = StockCommands(
    store: StockStore(database: database), clock: clock, ids: ids,
    reservationTTL: configuration.reservationTTL)
  return try commands.loadDemo(DemoAssortment.generate(productsPerHub: configuration.demoProductsPerHub))
}

extension PageCursorCodec {
  /// Cursors sealed and opened by `authenticator`.
  init(authenticator: MessageAuthenticator) {
    self.init(seal: authenticator.seal, open: { authenticator.open($0) })
  }
}
