import APNsSimulator
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

/// A wired NotifyGateway: its HTTP responder, store, delivery engine, the simulator (when pushes
/// go to it), and the long-running parts in start order (the outbox relay before the engine
/// whose rounds fill it, so it stops after it).
public struct NotifyGatewayApp: Sendable {
  public let router: Router
  public let store: NotifyStore
  /// The use cases the consumer and the controller call.
  public let commands: NotifyCommands
  public let engine: DeliveryEngine
  public let simulator: APNsSimulator?
  public let http: HTTPServer
  public let services: [any LifecycleService]
  public let metrics: MetricsRegistry

  public func run(logger: Logger) async throws {
    try await ServiceGroup(services: services, logger: logger).run()
  }
}

/// The composition root. Pushes go to `transport` when given (tests inject one; if it is a
/// `LifecycleService`, such as `CurlAPNsTransport`, it starts before the engine and stops after
/// it), else to what `GROCER_APNS_TRANSPORT` names: the built-in simulator (`simulator`, the
/// default) or APNs's provider API over HTTP/2 (`http2`, see `curlAPNsTransport(clock:logger:)`).
/// Throws `NotifyGatewayConfigurationError` when the APNs settings cannot be used.
public func buildNotifyGateway(
  configuration: NotifyGatewayConfiguration, logger: Logger, clock: any WallClock = SystemClock(),
  metrics: MetricsRegistry = MetricsRegistry(), transport: (any APNsTransport)? = nil,
  onDelivered: (@Sendable (DeliveredPush) -> Void)? = nil
) throws -> NotifyGatewayApp {
  let simulator: APNsSimulator?
  let chosen: any APNsTransport
  if let transport {
    simulator = nil
    chosen = transport
  } else {
    switch try configuration.apnsTransportKind() {
    case .simulator:
      let local = try configuration.simulator(clock: clock, logger: logger)
      simulator = local
      chosen = local
    case .http2:
      simulator = nil
      chosen = try configuration.curlAPNsTransport(clock: clock, logger: logger)
    }
  }
  var transportServices = (chosen as? any LifecycleService).map { [$0] } ?? []
  if let simulator { transportServices.append(simulator.journalFlusher(logger: logger)) }
  let database = try DatabaseLocation(
    settings: configuration.settings, sqlitePath: configuration.databasePath
  )
  .open(migrations: NotifySchema.migrations, logger: logger)
  let store = NotifyStore(database: database)
  let commands = NotifyCommands(
    store: store, clock: clock, updateLifetime: configuration.updateLifetime,
    startAfter: configuration.liveActivityStartAfter > 0 ? configuration.liveActivityStartAfter : nil)
  var engineOptions = DeliveryEngine.Options(bundleID: configuration.bundleID)
  engineOptions.concurrency = configuration.concurrency
  engineOptions.onDelivered = onDelivered
  engineOptions.sender = configuration.replicaID
  engineOptions.start = LiveActivityStartPolicy(
    after: configuration.liveActivityStartAfter, budget: configuration.liveActivityStartBudget)
  engineOptions.alertLifetime = configuration.updateLifetime
  let engine = DeliveryEngine(
    store: store, transport: chosen,
    policy: PushPolicy(hourlyBudget: configuration.hourlyBudget),
    options: engineOptions, clock: clock, logger: logger, metrics: metrics)

  let amqp = AMQPConfiguration(settings: configuration.settings, connectionName: configuration.serviceName)
  // `push.delivered` / `push.failed` leave through the outbox the delivery rounds write.
  let publisher = AMQPPublisher(
    configuration: amqp.named("\(configuration.serviceName)-publisher"), logger: logger, metrics: metrics)
  let relay = OutboxRelay(database: database, publisher: publisher, logger: logger, metrics: metrics)
  let handler = NotifyEventHandler(
    commands: commands, consumer: configuration.serviceName, logger: logger,
    coalesced: metrics.counter(
      "push_coalesced_total", help: "Updates replaced by a newer one before sending."),
    wake: { engine.wake() })
  // Events are taken in a thousand at a time, faster than pushes go out (an event costs a
  // fraction of a push): past what it can send, the backlog waits in the store, where only the
  // newest update of each activity is kept, rather than in the broker, where each would be pushed.
  let consumer = AMQPConsumer(
    configuration: amqp.named("\(configuration.serviceName)-events"),
    queue: QueueSpec(
      name: configuration.serviceName, bindingKeys: NotifyEventHandler.bindingKeys,
      kind: .durableQuorum(expiresAfter: configuration.queueExpiry.map { .milliseconds(Int($0 * 1000)) })),
    prefetch: 2000, maximumBatch: 1000, logger: logger, metrics: metrics, batchHandler: handler.handle)
  let inboxPurge = PeriodicTask(name: "inbox-purge", interval: .seconds(3600), logger: logger) {
    _ = try await database.onWriterQueue { try commands.purgeInbox() }
  }

  let verifier = HS256Verifier(secret: configuration.jwtSecret, clock: clock)
  var router = Router(verifier: verifier, metrics: metrics, logger: logger)
  router.add(NotifyController(commands: commands, simulator: simulator).routes)
  try router.addOpenAPIDocument(PackageResources.openapi_json)
  let broker = BrokerConnections([publisher, consumer])
  router.addOperationalRoutes(registry: metrics, brokerNodes: { broker.nodes }) {
    ["database": database.isReachable(), "broker": broker.areConnected]
  }
  let http = HTTPServer(
    configuration: HTTPServerConfiguration(settings: configuration.settings, defaultPort: 8085),
    responder: router, logger: logger)
  return NotifyGatewayApp(
    router: router, store: store, commands: commands, engine: engine, simulator: simulator, http: http,
    services: transportServices + [publisher, relay, engine, consumer, inboxPurge, http], metrics: metrics)
}
