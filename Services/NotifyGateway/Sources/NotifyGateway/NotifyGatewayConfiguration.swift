import Foundation
import GrocerCore
import GrocerRuntime

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
  /// Where pushes go: `simulator` (the built-in one, the default) or `http2` (the APNs provider
  /// API, `CurlAPNsTransport`). Checked by `buildNotifyGateway`.
  public var apnsTransport = "simulator"
  /// `production`, `sandbox` or a base URL (the simulator's TLS front: `https://localhost:8443`).
  public var apnsURL = "sandbox"
  /// The `.p8` token-signing key (PEM) Apple issued; required with `http2`.
  public var apnsKeyFile: String?
  /// The key's 10-character id (`kid`); required with `http2` and by `apns-simulator`.
  public var apnsKeyID: String?
  /// The developer team's 10-character id (`iss`); required with `http2` and by `apns-simulator`.
  public var apnsTeamID: String?
  /// A PEM file of CA certificates to trust instead of the system's (the simulator front's).
  public var apnsCAFile: String?
  /// `notify-gateway apns-simulator`: the public key (PEM) that checks the provider tokens.
  public var simulatorPublicKeyFile: String?
  /// This replica's name on the pushes it claims: one per replica, the same across its restarts
  /// (a restarted replica takes its claims back at once).
  public var replicaID: String
  /// How long a confirmed order's app has to start its Live Activity before the gateway starts
  /// it by push (`GROCER_LIVE_ACTIVITY_START_AFTER`, seconds; 0 turns push-to-start off).
  public var liveActivityStartAfter: TimeInterval = 20
  /// Push-to-start pushes per device per hour before an alert goes instead
  /// (`GROCER_LIVE_ACTIVITY_START_BUDGET`).
  public var liveActivityStartBudget = 3
  /// Whether the simulator keeps its record on disk (`GROCER_APNS_SIM_JOURNAL`, on unless 0).
  public var simulatorJournal = true
  public var settings: Settings

  public init(settings: Settings = Settings()) {
    self.settings = settings
    serviceName = settings.string("GROCER_SERVICE_NAME", default: serviceName)
    dataDirectory = settings.string("GROCER_DATA_DIR", default: "var/data/notify")
    replicaID = settings.string(
      "GROCER_REPLICA_ID", default: "\(ProcessInfo.processInfo.hostName)/\(serviceName)")
    jwtSecret = settings.string("GROCER_JWT_SECRET", default: Settings.localJWTSecret)
    bundleID = settings.string("GROCER_APNS_BUNDLE_ID", default: bundleID)
    hourlyBudget = max(0, settings.int("GROCER_PUSH_HOURLY_BUDGET", default: hourlyBudget))
    concurrency = max(1, settings.int("GROCER_PUSH_CONCURRENCY", default: concurrency))
    updateLifetime = max(1, settings.double("GROCER_PUSH_LIFETIME", default: updateLifetime))
    simulatorBurst = max(1, settings.int("GROCER_APNS_SIM_BURST", default: simulatorBurst))
    simulatorFailureRate = min(1, max(0, settings.double("GROCER_APNS_SIM_FAILURE_RATE", default: 0)))
    simulatorLatency = max(0, settings.double("GROCER_APNS_SIM_LATENCY", default: 0))
    simulatorJournal = settings.string("GROCER_APNS_SIM_JOURNAL", default: "1") != "0"
    liveActivityStartAfter = max(
      0, settings.double("GROCER_LIVE_ACTIVITY_START_AFTER", default: liveActivityStartAfter))
    liveActivityStartBudget = max(
      0, settings.int("GROCER_LIVE_ACTIVITY_START_BUDGET", default: liveActivityStartBudget))
    let expiry = settings.double("GROCER_QUEUE_EXPIRES", default: 0)
    queueExpiry = expiry > 0 ? expiry : nil
    apnsTransport = settings.string("GROCER_APNS_TRANSPORT", default: apnsTransport).lowercased()
    apnsURL = settings.string("GROCER_APNS_URL", default: apnsURL)
    func optional(_ key: String) -> String? {
      let value = settings.string(key, default: "")
      return value.isEmpty ? nil : value
    }
    apnsKeyFile = optional("GROCER_APNS_KEY_FILE")
    apnsKeyID = optional("GROCER_APNS_KEY_ID")
    apnsTeamID = optional("GROCER_APNS_TEAM_ID")
    apnsCAFile = optional("GROCER_APNS_CA_FILE")
    simulatorPublicKeyFile = optional("GROCER_APNS_SIM_PUBLIC_KEY")
  }

  var databasePath: String { dataDirectory + "/notify.sqlite" }
}

/// A setting NotifyGateway cannot work with; the message names the variable.
public struct NotifyGatewayConfigurationError: Error, Hashable, Sendable, CustomStringConvertible {
  public let message: String

  public init(_ message: String) { self.message = message }

  public var description: String { message }
}
