import Foundation
import GrocerCore

/// Everything NotifyGateway reads from its environment, with working local defaults.
public struct NotifyGatewayConfiguration: Sendable {
  public var serviceName = "notify-gateway"
  public var dataDirectory: String
  public var jwtSecret: String
  /// The iPhone app's bundle id (the APNs topic).
  public var bundleID = "com.grocer.app"
  /// Priority-10 Live Activity updates per activity per hour before updates go at priority 5.
  public var hourlyBudget = 12
  /// Requests to APNs in flight at once.
  public var concurrency = 64
  /// How long an update or alert is worth delivering (its `apns-expiration`).
  public var updateLifetime: TimeInterval = 600
  /// The simulator's per-token burst limit, injected failure rate and latency.
  public var simulatorBurst = 20
  public var simulatorFailureRate = 0.0
  public var simulatorLatency: TimeInterval = 0
  public var queueExpiry: TimeInterval?
  public var settings: Settings

  public init(settings: Settings = Settings()) {
    self.settings = settings
    serviceName = settings.string("GROCER_SERVICE_NAME", default: serviceName)
    dataDirectory = settings.string("GROCER_DATA_DIR", default: "var/data/notify")
    jwtSecret = settings.string("GROCER_JWT_SECRET", default: Settings.localJWTSecret)
    bundleID = settings.string("GROCER_APNS_BUNDLE_ID", default: bundleID)
    hourlyBudget = max(0, settings.int("GROCER_PUSH_HOURLY_BUDGET", default: hourlyBudget))
    concurrency = max(1, settings.int("GROCER_PUSH_CONCURRENCY", default: concurrency))
    updateLifetime = max(1, settings.double("GROCER_PUSH_LIFETIME", default: updateLifetime))
    simulatorBurst = max(1, settings.int("GROCER_APNS_SIM_BURST", default: simulatorBurst))
    simulatorFailureRate = min(1, max(0, settings.double("GROCER_APNS_SIM_FAILURE_RATE", default: 0)))
    simulatorLatency = max(0, settings.double("GROCER_APNS_SIM_LATENCY", default: 0))
    let expiry = settings.double("GROCER_QUEUE_EXPIRES", default: 0)
    queueExpiry = expiry > 0 ? expiry : nil
  }

  var databasePath: String { dataDirectory + "/notify.sqlite" }
}
