/// Settings of an `HTTP2Client`, with working defaults.
public struct HTTP2ClientConfiguration: Sendable {
  /// How HTTP/2 is reached.
  public enum VersionMode: Sendable, Equatable {
    /// HTTP/2 negotiated by TLS ALPN (`https://`, what APNs speaks); HTTP/1.1 if the server
    /// does not offer h2 (the response's `version` tells).
    case http2TLS
    /// HTTP/2 over plain TCP without negotiation (`http://`, h2c prior knowledge): for local
    /// test servers such as nginx with `listen … http2`.
    case http2PriorKnowledge
  }

  /// Scheme, host and port, optionally a path prefix: `https://api.push.apple.com`.
  public var baseURL: String
  public var versionMode: VersionMode
  /// The whole request, connecting and waiting for a free slot included.
  public var requestTimeout: Duration
  /// Connecting (TCP and TLS) alone; bounded by `requestTimeout` too.
  public var connectTimeout: Duration
  /// A PEM file of CA certificates to trust instead of the system's (a test server's own).
  public var caFile: String?
  /// Skips certificate and host name verification: only for a self-signed test server.
  public var insecure: Bool
  /// Requests handed to libcurl at once; more wait in the client's queue (their time-out runs).
  public var maxInFlight: Int
  /// Connections per host. HTTP/2 multiplexes every request over one; a second opens only when
  /// the first has as many streams as the server allows.
  public var maxConnectionsPerHost: Int
  /// Streams libcurl opens on one connection at most (the server's own limit applies as well;
  /// APNs allows up to 1,000).
  public var maxConcurrentStreams: Int
  /// Names the client's thread and its log lines.
  public var name: String

  public init(
    baseURL: String, versionMode: VersionMode = .http2TLS, requestTimeout: Duration = .seconds(10),
    connectTimeout: Duration = .seconds(5), caFile: String? = nil, insecure: Bool = false,
    maxInFlight: Int = 1000, maxConnectionsPerHost: Int = 2, maxConcurrentStreams: Int = 1000,
    name: String = "http2-client"
  ) {
    self.baseURL = baseURL
    self.versionMode = versionMode
    self.requestTimeout = requestTimeout
    self.connectTimeout = connectTimeout
    self.caFile = caFile
    self.insecure = insecure
    self.maxInFlight = max(1, maxInFlight)
    self.maxConnectionsPerHost = max(1, maxConnectionsPerHost)
    self.maxConcurrentStreams = max(1, maxConcurrentStreams)
    self.name = name
  }
}
