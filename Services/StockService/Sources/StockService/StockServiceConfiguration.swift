import Foundation
import GrocerContracts
import GrocerCore
import GrocerRuntime

/// Everything StockService reads from its environment, with working local defaults.
public struct StockServiceConfiguration: Sendable {
  /// Name used as the events' `source`, the durable queue's name and the log label.
  public var serviceName = "stock-service"
  /// A name unique to this process among the replicas (its cache-invalidation queue's name).
  public var replicaID: String
  public var dataDirectory: String
  public var jwtSecret: String
  /// How long a stock count may be served from memory.
  public var cacheTTL: TimeInterval = 30
  /// How long a reservation holds stock when no order outcome arrives.
  public var reservationTTL: TimeInterval = 600
  /// How often expired reservations are looked for.
  public var reservationSweepInterval: TimeInterval = 5
  /// The request/reply queue reservations are asked on.
  public var reservationQueue = ReservationQueue.name
  /// The request/reply queue the catalogue snapshot (hubs, a hub's products) is asked on.
  public var catalogueQueue = CatalogueQueue.name
  /// Products per hub that `stock-service load-demo` loads (`GROCER_DEMO_PRODUCTS`): the first
  /// ones of the full demo, the same whatever the number (the system tests load fewer).
  public var demoProductsPerHub = 3000
  /// The hub a caller without an address browses (`GROCER_DEFAULT_HUB`).
  public var defaultHub: HubID = "h1"
  /// When set, the broker deletes this service's queue once unused that long (tests, throw-away
  /// deployments); never in production, where a stopped service must find its events waiting.
  public var queueExpiry: TimeInterval?
  /// A fault drill (`GROCER_FAULT_RELAY_DIES`): the outbox relay's loop fails after its first
  /// pass, which must end the process non-zero (never set in production).
  public var relayDies = false
  /// A fault drill (`GROCER_FAULT_CONSUMER_DIES`): the order-outcome consumer's connection loop
  /// fails right after it connected, which must end the process non-zero (never set in production).
  public var consumerDies = false
  public var settings: Settings

  public init(settings: Settings = Settings()) {
    self.settings = settings
    serviceName = settings.string("GROCER_SERVICE_NAME", default: serviceName)
    reservationQueue = settings.string("GROCER_RESERVATION_QUEUE", default: reservationQueue)
    let expiry = settings.double("GROCER_QUEUE_EXPIRES", default: 0)
    queueExpiry = expiry > 0 ? expiry : nil
    catalogueQueue = settings.string("GROCER_CATALOGUE_QUEUE", default: catalogueQueue)
    defaultHub = settings.string("GROCER_DEFAULT_HUB", default: defaultHub)
    demoProductsPerHub = max(1, settings.int("GROCER_DEMO_PRODUCTS", default: demoProductsPerHub))
    relayDies = settings.bool("GROCER_FAULT_RELAY_DIES", default: false)
    consumerDies = settings.bool("GROCER_FAULT_CONSUMER_DIES", default: false)
    dataDirectory = settings.string("GROCER_DATA_DIR", default: "var/data/stock")
    jwtSecret = settings.string("GROCER_JWT_SECRET", default: Settings.localJWTSecret)
    cacheTTL = settings.double("GROCER_STOCK_CACHE_TTL", default: cacheTTL)
    reservationTTL = settings.double("GROCER_RESERVATION_TTL", default: reservationTTL)
    reservationSweepInterval = max(
      0.05, settings.double("GROCER_RESERVATION_SWEEP_INTERVAL", default: reservationSweepInterval))
    cacheTTL = max(0, cacheTTL)
    reservationTTL = max(1, reservationTTL)
    replicaID = settings.string(
      "GROCER_REPLICA_ID", default: "\(ProcessInfo.processInfo.hostName)-\(getpid())")
  }

  var databasePath: String { dataDirectory + "/stock.sqlite" }
}
