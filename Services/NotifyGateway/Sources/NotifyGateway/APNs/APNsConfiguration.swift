import APNsSimulator
import Foundation
import GrocerAuth
import GrocerCore
import GrocerRuntime

/// Where NotifyGateway sends its pushes (`GROCER_APNS_TRANSPORT`).
public enum APNsTransportKind: String, Sendable, Hashable, CaseIterable {
  /// The built-in `APNsSimulator`, in process.
  case simulator
  /// APNs's provider API over HTTP/2 (`CurlAPNsTransport`).
  case http2
}

extension NotifyGatewayConfiguration {
  /// `apnsTransport` read, or a configuration error naming the choices.
  public func apnsTransportKind() throws(NotifyGatewayConfigurationError) -> APNsTransportKind {
    guard let kind = APNsTransportKind(rawValue: apnsTransport) else {
      throw NotifyGatewayConfigurationError(
        "GROCER_APNS_TRANSPORT=\(apnsTransport) is neither `simulator` nor `http2`")
    }
    return kind
  }

  /// The simulator `GROCER_APNS_SIM_*` describes, its record and channels kept in a journal in
  /// the data folder (and its channels taken back from it) unless `GROCER_APNS_SIM_JOURNAL=0`.
  public func simulator(clock: any WallClock, logger: Logger) throws -> APNsSimulator {
    let journal =
      simulatorJournal ? try SimulatorJournalStore(dataDirectory: dataDirectory, logger: logger) : nil
    let simulator = APNsSimulator(options: simulatorOptions, clock: clock, journal: journal)
    try simulator.restore()
    return simulator
  }

  /// The simulator's options from `GROCER_APNS_SIM_*`.
  public var simulatorOptions: APNsSimulator.Options {
    var options = APNsSimulator.Options(bundleID: bundleID)
    options.perTokenBurst = simulatorBurst
    options.failureRate = simulatorFailureRate
    options.latency = .milliseconds(Int(simulatorLatency * 1000))
    return options
  }

  /// The provider token from `GROCER_APNS_KEY_FILE`, `GROCER_APNS_KEY_ID` and `GROCER_APNS_TEAM_ID`.
  public func apnsProviderToken(clock: any WallClock) throws(NotifyGatewayConfigurationError)
    -> APNsProviderToken
  {
    guard let keyFile = apnsKeyFile else {
      throw NotifyGatewayConfigurationError(
        "GROCER_APNS_TRANSPORT=http2 needs GROCER_APNS_KEY_FILE (the .p8 key Apple issued)")
    }
    let (keyID, teamID) = try apnsIdentifiers()
    let key: ES256Key
    do {
      key = try ES256Key(contentsOfFile: keyFile)
    } catch {
      throw NotifyGatewayConfigurationError("GROCER_APNS_KEY_FILE=\(keyFile): \(error)")
    }
    do {
      return try APNsProviderToken(key: key, keyID: keyID, teamID: teamID, clock: clock)
    } catch {
      throw NotifyGatewayConfigurationError("GROCER_APNS_KEY_ID/GROCER_APNS_TEAM_ID: \(error)")
    }
  }

  /// The real transport as configured (`GROCER_APNS_URL`, `GROCER_APNS_CA_FILE` and the key).
  public func curlAPNsTransport(clock: any WallClock, logger: Logger) throws(NotifyGatewayConfigurationError)
    -> CurlAPNsTransport
  {
    guard let host = APNsHost(apnsURL) else {
      throw NotifyGatewayConfigurationError(
        "GROCER_APNS_URL=\(apnsURL) is not `production`, `sandbox` or an https:// URL")
    }
    if let caFile = apnsCAFile, !FileManager.default.isReadableFile(atPath: caFile) {
      throw NotifyGatewayConfigurationError("GROCER_APNS_CA_FILE=\(caFile) cannot be read")
    }
    return CurlAPNsTransport(
      host: host, providerToken: try apnsProviderToken(clock: clock), logger: logger, caFile: apnsCAFile,
      maxInFlight: max(concurrency, 1))
  }

  /// The simulator's token check: the public key `GROCER_APNS_SIM_PUBLIC_KEY` under
  /// `GROCER_APNS_KEY_ID`, tokens issued by `GROCER_APNS_TEAM_ID`.
  public func simulatorTokenVerifier(clock: any WallClock) throws(NotifyGatewayConfigurationError)
    -> APNsProviderTokenVerifier
  {
    guard let keyFile = simulatorPublicKeyFile else {
      throw NotifyGatewayConfigurationError(
        "the APNs simulator needs GROCER_APNS_SIM_PUBLIC_KEY (the PEM public key of the provider's key)")
    }
    let (keyID, teamID) = try apnsIdentifiers()
    let key: ES256PublicKey
    do {
      let pem = try String(contentsOfFile: keyFile, encoding: .utf8)
      key = try ES256PublicKey(pem: pem)
    } catch {
      throw NotifyGatewayConfigurationError("GROCER_APNS_SIM_PUBLIC_KEY=\(keyFile): \(error)")
    }
    return APNsProviderTokenVerifier(keys: [keyID: key], teamID: teamID, clock: clock)
  }

  private func apnsIdentifiers() throws(NotifyGatewayConfigurationError) -> (keyID: String, teamID: String) {
    guard let keyID = apnsKeyID, let teamID = apnsTeamID else {
      throw NotifyGatewayConfigurationError(
        "GROCER_APNS_KEY_ID and GROCER_APNS_TEAM_ID (10 letters and digits each) are required")
    }
    return (keyID, teamID)
  }
}
