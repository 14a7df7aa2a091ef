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

/// A wired TrackingService: its HTTP responder (for in-process tests) and the long-running parts
/// in start order (for `ServiceGroup`).
public struct TrackingServiceApp: Sendable {
  public let router: Router
  public let store: TrackingStore
  /// The use cases the controller and the consumer call.
  public let commands: TrackingCommands
  public let http: HTTPServer
  /// Relay, consumer, sweepers and HTTP, in the order they start.
  public let services: [any LifecycleService]
  public let metrics: MetricsRegistry

  /// Runs until SIGTERM/SIGINT, then drains HTTP, the consumer and the relay, in reverse order.
  public func run(logger: Logger) async throws {
    try await ServiceGroup(services: services, logger: logger).run()
  }
}

/// The composition root: builds every part of TrackingService from its configuration.
public func buildTrackingService(
  configuration: TrackingServiceConfiguration, logger: Logger, clock: any WallClock = SystemClock(),
  ids: any IDGenerator = TimeOrderedIDs(), metrics: MetricsRegistry = MetricsRegistry(),
  eta: ETAModel = ETAModel()
) throws -> TrackingServiceApp {
  let database = try DatabaseLocation(
    settings: configuration.settings, sqlitePath: configuration.databasePath
  )
  .open(migrations: TrackingSchema.migrations, logger: logger)
  let store = TrackingStore(database: database)
  let commands = TrackingCommands(
    store: store, clock: clock, ids: ids, eta: eta, source: configuration.serviceName)

  let amqp = AMQPConfiguration(settings: configuration.settings, connectionName: configuration.serviceName)
  let publisher = AMQPPublisher(
    configuration: amqp.named("\(configuration.serviceName)-publisher"), logger: logger, metrics: metrics)
  let relay = OutboxRelay(database: database, publisher: publisher, logger: logger, metrics: metrics)
  let handler = TrackingEventHandler(
    orders: OrderConfirmedHandler(commands: commands, consumer: configuration.serviceName, logger: logger),
    pushes: PushOutcomeHandler(commands: commands, consumer: configuration.serviceName, logger: logger),
    notices: NoticeHandler(commands: commands, consumer: configuration.serviceName, logger: logger))
  let consumer = AMQPConsumer(
    configuration: amqp.named("\(configuration.serviceName)-events"),
    queue: QueueSpec(
      name: configuration.serviceName, bindingKeys: TrackingEventHandler.bindingKeys,
      kind: .durableQuorum(expiresAfter: configuration.queueExpiry.map { .milliseconds(Int($0 * 1000)) })),
    logger: logger, metrics: metrics, handler: handler.handle)

  let etaSweep = PeriodicTask(
    name: "eta-sweep", interval: .milliseconds(Int(configuration.etaSweepInterval * 1000)), logger: logger
  ) {
    _ = try await database.onWriterQueue { try commands.refreshLateETAs() }
  }
  let inboxPurge = PeriodicTask(name: "inbox-purge", interval: .seconds(3600), logger: logger) {
    _ = try await database.onWriterQueue { try commands.purgeInbox() }
  }
  // The hubs' notices kept in the database, once: at start, or as soon as a database that was not
  // there at start is (events keep them current after that).
  let noticeLoader = PeriodicTask(name: "notice-loader", interval: .seconds(5), logger: logger) {
    guard !commands.notices.loaded else { return }
    try await runBlocking { try commands.loadNotices() }
  }
  let heartbeat = PeriodicTask(
    name: "stream-heartbeat", interval: .milliseconds(Int(configuration.streamHeartbeat * 1000)),
    logger: logger
  ) { _ = commands.streams.heartbeat() }
  // Replicas on one database: the others' changes reach this one's streams as events.
  var streamFeed: [any LifecycleService] = []
  if database.mayHaveOtherWriters {
    let feed = StreamFeedHandler(commands: commands, clock: clock, logger: logger)
    streamFeed.append(
      AMQPConsumer(
        configuration: amqp.named("\(configuration.serviceName)-streams"),
        queue: QueueSpec(
          name: "\(configuration.serviceName).streams.\(configuration.replicaID)",
          bindingKeys: [TrackingEventType.updated], kind: .transient),
        prefetch: 500, logger: logger, metrics: metrics, handler: feed.handle))
  }

  let verifier = HS256Verifier(secret: configuration.jwtSecret, clock: clock)
  var router = Router(verifier: verifier, metrics: metrics, logger: logger)
  router.add(
    TrackingController(
      commands: commands, clock: clock, finishedRetention: configuration.finishedRetention,
      clockSkew: configuration.clockSkew
    ).routes)
  try router.addOpenAPIDocument(PackageResources.openapi_json)
  let broker = BrokerConnections([publisher, consumer] + streamFeed.compactMap { $0 as? AMQPConsumer })
  router.addOperationalRoutes(registry: metrics, brokerNodes: { broker.nodes }) {
    ["database": database.isReachable(), "broker": broker.areConnected]
  }
  let http = HTTPServer(
    configuration: HTTPServerConfiguration(settings: configuration.settings, defaultPort: 8084),
    responder: router, logger: logger)

  return TrackingServiceApp(
    router: router, store: store, commands: commands, http: http,
    services: [publisher, relay, consumer] + streamFeed + [
      etaSweep, inboxPurge, noticeLoader, heartbeat, http,
    ],
    metrics: metrics)
}
