import APNsSimulator
import Foundation
import GrocerAuth
import GrocerCore
import GrocerHTTP
import GrocerHTTPServer
import GrocerRuntime

/// `notify-gateway apns-simulator`: the APNs simulator alone, as an HTTP/1.1 server (put nginx in
/// front for TLS and HTTP/2: `deploy/local/apns-simulator.sh`).
public struct APNsSimulatorServer: Sendable {
  public let simulator: APNsSimulator
  public let verifier: APNsProviderTokenVerifier
  public let http: HTTPServer
  public let metrics: MetricsRegistry
  private let flusher: PeriodicTask

  /// Serves `APNsSimulatorRoutes` and the operational routes on `GROCER_HTTP_PORT` (default 8086).
  /// The provider tokens are checked against `GROCER_APNS_SIM_PUBLIC_KEY` under
  /// `GROCER_APNS_KEY_ID` and `GROCER_APNS_TEAM_ID`; the simulator's rules come from
  /// `GROCER_APNS_BUNDLE_ID` and `GROCER_APNS_SIM_*`. `GET /v1/sim/devices/{token}` wants a staff
  /// token signed with `GROCER_JWT_SECRET`, as on the gateway. The record is kept in
  /// `GROCER_DATA_DIR/apns-simulator.sqlite` (`SimulatorJournalStore`).
  public init(
    configuration: NotifyGatewayConfiguration, logger: Logger, clock: any WallClock = SystemClock(),
    metrics: MetricsRegistry = MetricsRegistry()
  ) throws {
    let verifier = try configuration.simulatorTokenVerifier(clock: clock)
    let simulator = try configuration.simulator(clock: clock, logger: logger)
    var router = Router(
      verifier: HS256Verifier(secret: configuration.jwtSecret, clock: clock), metrics: metrics, logger: logger
    )
    router.add(APNsSimulatorRoutes(simulator: simulator, verifier: verifier).routes)
    router.addOperationalRoutes(registry: metrics) { [:] }
    self.simulator = simulator
    self.verifier = verifier
    self.metrics = metrics
    flusher = simulator.journalFlusher(logger: logger)
    http = HTTPServer(
      configuration: HTTPServerConfiguration(settings: configuration.settings, defaultPort: 8086),
      responder: APNsPathResponder(router: router), logger: logger)
  }

  public func run(logger: Logger) async throws {
    try await ServiceGroup(services: [flusher, http], logger: logger).run()
  }
}
