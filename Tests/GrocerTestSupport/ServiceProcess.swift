import Foundation
import Testing

#if canImport(FoundationNetworking)
  import FoundationNetworking
#endif

/// A service executable of this package (`.build/debug/<name>`) run by a test with its own
/// environment: set-up subcommands once, the service itself in the background, SIGTERM to end it.
public struct ServiceExecutable: Sendable {
  public let path: String
  public let environment: [String: String]

  /// The debug build of `name`; the test fails (not skips) if it was not built.
  public init(_ name: String, environment: [String: String]) throws {
    path = TestBroker.repositoryRoot.appendingPathComponent(".build/debug/\(name)").path
    try #require(
      FileManager.default.isExecutableFile(atPath: path), "build it first (make test does): \(path)")
    self.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
  }

  /// Runs `arguments` (e.g. `load-demo`) to the end; returns the exit status.
  public func runToEnd(_ arguments: [String]) throws -> Int32 {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: path)
    process.arguments = arguments
    process.environment = environment
    process.standardOutput = FileHandle.nullDevice
    process.standardError = FileHandle.nullDevice
    try process.run()
    process.waitUntilExit()
    return process.terminationStatus
  }

  /// Starts the service; its stderr (the JSON log) is kept for `stop`.
  public func start() throws -> RunningService {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: path)
    process.environment = environment
    // Standard error into a file, not a pipe: a chatty service would block once a pipe's
    // buffer is full and nobody reads it.
    let log = FileManager.default.temporaryDirectory.appendingPathComponent(
      "grocer-\(URL(fileURLWithPath: path).lastPathComponent)-\(UUID().uuidString.prefix(8)).log")
    _ = FileManager.default.createFile(atPath: log.path, contents: nil)
    let handle = try FileHandle(forWritingTo: log)
    process.standardError = handle
    defer { try? handle.close() }
    try process.run()
    return RunningService(process: process, log: log)
  }
}

/// A started service process.
public final class RunningService: @unchecked Sendable {
  let process: Process
  /// The file its standard error goes to.
  public let log: URL

  init(process: Process, log: URL) {
    self.process = process
    self.log = log
  }

  deinit {
    if process.isRunning { process.terminate() }
    try? FileManager.default.removeItem(at: log)
  }

  /// Whether the process still runs.
  public var isRunning: Bool { process.isRunning }

  /// What it logged so far.
  public var logText: String {
    (try? String(contentsOf: log, encoding: .utf8)) ?? ""
  }

  /// Whether `url` answered `status` within `timeout`.
  public func answers(_ url: URL, status: Int = 200, timeout: Duration = .seconds(20)) async -> Bool {
    await eventually(timeout: timeout) {
      guard let (_, response) = try? await URLSession.shared.data(from: url) else { return false }
      return (response as? HTTPURLResponse)?.statusCode == status
    }
  }

  /// Its exit status if it exits within `timeout` on its own; nil while it still runs.
  public func exitStatus(within timeout: Duration) async -> Int32? {
    let process = self.process
    guard await eventually(timeout: timeout, { !process.isRunning }) else { return nil }
    return process.terminationStatus
  }

  /// Sends SIGTERM and waits for the exit: whether it exited in time, its status and its log.
  public func terminate(timeout: Duration = .seconds(20)) async -> (exited: Bool, status: Int32, log: String)
  {
    kill(process.processIdentifier, SIGTERM)
    let process = self.process
    let exited = await eventually(timeout: timeout) { !process.isRunning }
    guard exited else { return (false, -1, "") }
    return (true, process.terminationStatus, logText)
  }
}
