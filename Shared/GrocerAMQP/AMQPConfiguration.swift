import Foundation
import GrocerCore
import GrocerRuntime

/// How to reach the broker and how to behave when the connection breaks.
public struct AMQPConfiguration: Sendable {
  /// The default local broker (the node `deploy/local/rabbitmq.sh` starts).
  public static let defaultURL = "amqp://guest:guest@127.0.0.1:5672/"

  /// The broker's nodes, each `amqp://user:password@host:port/vhost` (an empty path or `/`
  /// means the vhost `/`): a connection goes to the first that answers, trying the others in
  /// turn, and after a lost connection starts with the node after the one it lost.
  public var urls: [String]
  /// The first of `urls`; setting it makes it the only one.
  public var url: String {
    get { urls.first ?? Self.defaultURL }
    set { urls = [newValue] }
  }
  /// Heartbeat interval in seconds; a dead broker shows after about twice this.
  public var heartbeat: Int
  /// Reconnect delays grow from `minimum` to `maximum`, with jitter.
  public var reconnectBackoff: ReconnectBackoff
  /// Shown in the management UI and `rabbitmqctl list_connections`.
  public var connectionName: String
  /// How long opening the TCP connection may take.
  public var connectTimeout: Duration
  /// How long a publish waits for its confirms before throwing `AMQPError.timeout`.
  public var publishTimeout: Duration

  public init(
    url: String = AMQPConfiguration.defaultURL,
    heartbeat: Int = 10,
    reconnectBackoff: ReconnectBackoff = ReconnectBackoff(),
    connectionName: String = "grocer",
    connectTimeout: Duration = .seconds(5),
    publishTimeout: Duration = .seconds(30)
  ) {
    self.urls = [url]
    self.heartbeat = heartbeat
    self.reconnectBackoff = reconnectBackoff
    self.connectionName = connectionName
    self.connectTimeout = connectTimeout
    self.publishTimeout = publishTimeout
  }

  /// Reads `GROCER_AMQP_URLS` (a cluster's nodes, comma-separated, taken in an order shuffled
  /// per process so that connections spread over the nodes) or else `GROCER_AMQP_URL`,
  /// `GROCER_AMQP_HEARTBEAT` (seconds) and `GROCER_AMQP_FAILOVER_DELAY_MS`
  /// (`ReconnectBackoff.afterLoss`: default 1,000 with several nodes, 0 with one; a cluster behind
  /// one address, such as a Kubernetes Service, sets it).
  public init(settings: Settings, connectionName: String = "grocer") {
    self.init(
      url: settings.string("GROCER_AMQP_URL", default: AMQPConfiguration.defaultURL),
      heartbeat: settings.int("GROCER_AMQP_HEARTBEAT", default: 10),
      connectionName: connectionName)
    let cluster = Self.urls(in: settings.string("GROCER_AMQP_URLS", default: ""))
    if !cluster.isEmpty { urls = cluster.shuffled() }
    let failoverDelay = urls.count > 1 ? Self.defaultFailoverDelayMilliseconds : 0
    reconnectBackoff.afterLoss = .milliseconds(
      max(0, settings.int("GROCER_AMQP_FAILOVER_DELAY_MS", default: failoverDelay)))
  }

  /// A cluster's default `ReconnectBackoff.afterLoss`: on loopback, RabbitMQ re-elected the
  /// leaders of a killed node's quorum queues within 0.2 s; a second leaves room for load.
  public static let defaultFailoverDelayMilliseconds = 1000

  /// The URLs of a comma-separated list, blanks dropped.
  public static func urls(in list: String) -> [String] {
    list.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
  }

  /// A copy with another connection name (each publisher/consumer names its own connection).
  public func named(_ name: String) -> AMQPConfiguration {
    var copy = self
    copy.connectionName = name
    return copy
  }
}

/// Exponential reconnect delays with "equal jitter": half fixed, half random, so replicas that
/// lost the broker together do not all come back at the same instant.
public struct ReconnectBackoff: Sendable, Hashable {
  public var minimum: Duration
  public var maximum: Duration
  /// The least wait before reconnecting after a connection that was up got lost. On a cluster
  /// the node may have died with quorum queue leaders on it: a channel opened on another node
  /// before they are re-elected keeps sending to the dead leader until that node comes back
  /// (seen on RabbitMQ 3.10: no confirms, no deliveries), so the first attempt waits this long.
  public var afterLoss: Duration

  public init(
    minimum: Duration = .milliseconds(100), maximum: Duration = .seconds(5), afterLoss: Duration = .zero
  ) {
    self.minimum = minimum
    self.maximum = maximum
    self.afterLoss = afterLoss
  }

  /// The delay before retry number `attempt` (0 = first retry); `jitter` is in 0...1.
  public func delay(attempt: Int, jitter: Double) -> Duration {
    let base = min(maximum, minimum * pow(2.0, Double(min(attempt, 30))))
    let jittered = base * (0.5 + 0.5 * min(max(jitter, 0), 1))
    return min(maximum, max(minimum, jittered))
  }
}
