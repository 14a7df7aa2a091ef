import Foundation
import GrocerCore
import GrocerHTTP
import GrocerRuntime

/// Settings of the libmicrohttpd adapter, with working defaults.
public struct HTTPServerConfiguration: Sendable {
  /// Address to bind; loopback by default (the gateway sits in front).
  public var host: String
  /// 0 picks an ephemeral port; read the bound one from `HTTPServer.port`.
  public var port: Int
  /// Worker threads (one MHD daemon each; the acceptor gives each new connection to the one
  /// holding the fewest), each polling its own share of connections; default one per core, as
  /// nginx's `worker_processes auto`. Measured on 2 cores with the stock lookup against nginx,
  /// taking turns in the same run, before the threads yielded (`yieldEvery`): 2 threads gave
  /// 0.74–0.90× nginx's requests/s with p99 4.5–4.9 ms at 64 connections and 7.0–7.4 ms at
  /// 256; 4 threads 0.93–1.04× but p99 5.2–9.0 and 10.8–12.0 ms (more runnable threads than
  /// cores: each waits longer for its turn, and its connections with it).
  /// `GROCER_HTTP_THREADS=4` trades that tail for throughput.
  public var threadPoolSize: Int
  /// Connections held at once. Past it the oldest connection waiting for a request is closed to
  /// make room (a new one is refused only when all are busy), so idle connections cannot lock
  /// honest clients out. Each idle connection costs ~7 KiB (measured with 10,000 held); the
  /// server raises its soft RLIMIT_NOFILE to fit the limit when the hard limit allows.
  public var connectionLimit: Int
  /// A connection silent for this long is closed, and every request must be read in full (request
  /// line, headers, body) within this long of the connection being accepted or of its previous
  /// response: MHD's own timeout restarts on every byte, so a client sending one byte a second
  /// (slowloris) would otherwise hold its connection forever. Handler time does not count.
  public var connectionTimeoutSeconds: Int
  /// Larger bodies get a 413 without being read.
  public var maxBodyBytes: Int
  /// Per-connection memory for the request line, headers and read buffer; a request whose
  /// headers do not fit gets MHD's own 431. 8 KiB, not MHD's 32 KiB: MHD clears the pool between
  /// requests on a kept-alive connection, and that memset was a visible share of the stock hot
  /// path (measured: ~+30% requests/s at 64 connections).
  public var connectionMemoryLimit: Int
  /// How long `shutdown` waits for async handlers in flight before answering them with 503.
  public var shutdownGracePeriod: Duration
  /// A transport thread gives up its core (`sched_yield`) when it has answered this many
  /// requests without sleeping once; 0 never. Under load MHD's poll loop always finds a request
  /// waiting, so its threads never sleep, and a thread that never sleeps keeps its core until the
  /// scheduler's slice ends: whatever shares the core (the other services and the broker on a
  /// small machine, a load generator) waits milliseconds for its turn, and the requests it would
  /// send or answer with it. Measured on 2 cores, stock lookups with wrk on the same cores
  /// (`Benchmarks/stock-lookup`, four runs each): at 64 connections p99 5.8 ms never yielding,
  /// 1.4–3.1 ms yielding every 32 (0.89–0.95× nginx's requests/s); at 256, 0.86–0.96× with p99
  /// 6.2–7.2 ms, as never yielding (0.89–0.94×, 7.7–8.3 ms). Every 8 did as well at 64 but cost
  /// at 256 (0.73–0.91×, p99 up to 11 ms): with 128 connections a thread waits longer for its
  /// core once it gives it away. A thread that sleeps between requests is not made to yield: it
  /// gives way by itself, and yielding it too made the tracking benchmark's requests wait behind
  /// the service's busy executor threads. See `TransportYield`.
  public var yieldEvery: Int

  public init(
    host: String = "127.0.0.1", port: Int = 8080,
    threadPoolSize: Int = ProcessInfo.processInfo.activeProcessorCount,
    connectionLimit: Int = 10_000, connectionTimeoutSeconds: Int = 15,
    maxBodyBytes: Int = BodyLimit.defaultBytes,
    connectionMemoryLimit: Int = 8 * 1024, shutdownGracePeriod: Duration = .seconds(10),
    yieldEvery: Int = 32
  ) {
    self.host = host
    self.port = port
    self.threadPoolSize = max(1, threadPoolSize)
    self.connectionLimit = connectionLimit
    self.connectionTimeoutSeconds = max(1, connectionTimeoutSeconds)
    self.maxBodyBytes = maxBodyBytes
    self.connectionMemoryLimit = connectionMemoryLimit
    self.shutdownGracePeriod = shutdownGracePeriod
    self.yieldEvery = max(0, yieldEvery)
  }

  /// Reads `GROCER_HTTP_HOST`, `GROCER_HTTP_PORT`, `GROCER_HTTP_THREADS`,
  /// `GROCER_HTTP_CONNECTION_LIMIT`, `GROCER_HTTP_CONNECTION_TIMEOUT` (seconds; the older name
  /// `GROCER_HTTP_IDLE_TIMEOUT` is still read when the new one is absent),
  /// `GROCER_HTTP_MAX_BODY_BYTES`, `GROCER_HTTP_CONNECTION_MEMORY` (bytes),
  /// `GROCER_HTTP_YIELD_EVERY` (requests; 0 never); `defaultPort` is the service's own port.
  public init(settings: Settings, defaultPort: Int = 8080) {
    let defaults = HTTPServerConfiguration(port: defaultPort)
    self.init(
      host: settings.string("GROCER_HTTP_HOST", default: defaults.host),
      port: settings.int("GROCER_HTTP_PORT", default: defaults.port),
      threadPoolSize: settings.int("GROCER_HTTP_THREADS", default: defaults.threadPoolSize),
      connectionLimit: settings.int("GROCER_HTTP_CONNECTION_LIMIT", default: defaults.connectionLimit),
      connectionTimeoutSeconds: settings.int(
        "GROCER_HTTP_CONNECTION_TIMEOUT",
        default: settings.int("GROCER_HTTP_IDLE_TIMEOUT", default: defaults.connectionTimeoutSeconds)),
      maxBodyBytes: settings.int("GROCER_HTTP_MAX_BODY_BYTES", default: defaults.maxBodyBytes),
      connectionMemoryLimit: settings.int(
        "GROCER_HTTP_CONNECTION_MEMORY", default: defaults.connectionMemoryLimit),
      yieldEvery: settings.int("GROCER_HTTP_YIELD_EVERY", default: defaults.yieldEvery))
  }
}
