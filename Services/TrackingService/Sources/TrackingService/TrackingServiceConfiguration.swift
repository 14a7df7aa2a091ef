import Foundation
import GrocerCore
import GrocerRuntime

/// Everything TrackingService reads from its environment, with working local defaults.
public struct TrackingServiceConfiguration: Sendable {
  /// Name used as the durable queue's name, the inbox consumer, the events' `source` and the
  /// log label.
  public var serviceName = "tracking-service"
  public var dataDirectory: String
  public var jwtSecret: String
  /// How long a delivered or cancelled order stays in `GET /v1/orders/active`.
  public var finishedRetention: TimeInterval = 30 * 60
  /// How far in the future a rider fix's `recordedAt` may be.
  public var clockSkew: TimeInterval = 30
  /// How often running orders with an ETA about to pass are re-estimated.
  public var etaSweepInterval: TimeInterval = 15
  /// When set, the broker deletes this service's queue once unused that long (tests, throw-away
  /// deployments); never in production.
  public var queueExpiry: TimeInterval?
  /// How often each open tracking stream gets a heartbeat comment.
  public var streamHeartbeat: TimeInterval = 15
  /// This replica's name (its queue for other replicas' changes, which feed its streams).
  public var replicaID: String
  public var settings: Settings

  public init(settings: Settings = Settings()) {
    self.settings = settings
    serviceName = settings.string("GROCER_SERVICE_NAME", default: serviceName)
    dataDirectory = settings.string("GROCER_DATA_DIR", default: "var/data/tracking")
    jwtSecret = settings.string("GROCER_JWT_SECRET", default: Settings.localJWTSecret)
    finishedRetention = max(
      0, settings.double("GROCER_TRACKING_FINISHED_RETENTION", default: finishedRetention))
    clockSkew = max(0, settings.double("GROCER_TRACKING_CLOCK_SKEW", default: clockSkew))
    etaSweepInterval = max(0.05, settings.double("GROCER_ETA_SWEEP_INTERVAL", default: etaSweepInterval))
    streamHeartbeat = max(0.05, settings.double("GROCER_TRACKING_STREAM_HEARTBEAT", default: streamHeartbeat))
    replicaID = settings.string(
      "GROCER_REPLICA_ID",
      default: "\(ProcessInfo.processInfo.hostName)-\(ProcessInfo.processInfo.processIdentifier)")
    let expiry = settings.double("GROCER_QUEUE_EXPIRES", default: 0)
    queueExpiry = expiry > 0 ? expiry : nil
  }

  public var databasePath: String { dataDirectory + "/tracking.sqlite" }
}
