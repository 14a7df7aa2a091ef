import Foundation
import GrocerRuntime

#if canImport(FoundationNetworking)
  import FoundationNetworking
#endif

/// A `notify-gateway` the push load tool starts as a process of its own, so its memory and CPU
/// are the gateway's alone (the generator and its bookkeeping stay in the tool). It is reached as
/// operators reach it: its HTTP API and `/metrics`, and its simulator's journal once stopped.
public final class GatewayProcess: @unchecked Sendable {
  let port: Int
  let dataDirectory: String
  private let process: Process
  private let logPath: String
  private let session: URLSession

  /// Starts `executable` with the environment the tool runs in plus `overrides`, on a free
  /// loopback port, and waits until `/health/ready` answers 200.
  init(executable: String, dataDirectory: String, overrides: [String: String]) async throws {
    guard FileManager.default.isExecutableFile(atPath: executable) else {
      throw PushLoadTool.LoadError(
        description: "\(executable) is missing (build notify-gateway next to grocer)")
    }
    try FileManager.default.createDirectory(atPath: dataDirectory, withIntermediateDirectories: true)
    let configuration = URLSessionConfiguration.ephemeral
    configuration.timeoutIntervalForRequest = 15
    session = URLSession(configuration: configuration)
    self.dataDirectory = dataDirectory
    logPath = dataDirectory + "/notify-gateway.log"
    _ = FileManager.default.createFile(atPath: logPath, contents: nil)
    // A port someone else took makes the gateway exit: another is tried, a few times.
    for _ in 1...5 {
      let port = Int.random(in: 20_000..<40_000)
      // A port something already answers on would pass its readiness off as the gateway's.
      if await Self.answers(session, port: port) { continue }
      let process = Process()
      process.executableURL = URL(fileURLWithPath: executable)
      process.environment = ProcessInfo.processInfo.environment.merging(
        overrides.merging(["GROCER_HTTP_PORT": "\(port)", "GROCER_DATA_DIR": dataDirectory]) { $1 }
      ) { $1 }
      let log = try FileHandle(forWritingTo: URL(fileURLWithPath: logPath))
      log.seekToEndOfFile()
      process.standardOutput = log
      process.standardError = log
      try process.run()
      let answer = await Self.ready(session, port: port, process: process)
      if answer == "ready" {
        self.port = port
        self.process = process
        return
      }
      if process.isRunning {
        // Up but not ready (the broker or the database missing): another port would not help.
        process.terminate()
        process.waitUntilExit()
        throw PushLoadTool.LoadError(
          description:
            "notify-gateway was not ready within 30 s (/health/ready: \(answer)); its log (\(logPath)):\n"
            + Self.tail(logPath))
      }
    }
    throw PushLoadTool.LoadError(
      description: "notify-gateway did not become ready; its log (\(logPath)):\n" + Self.tail(logPath))
  }

  /// "ready" once `/health/ready` answers 200; else its last answer ("no answer" if none) when
  /// 30 s passed or the process ended.
  private static func ready(_ session: URLSession, port: Int, process: Process) async -> String {
    let url = URL(string: "http://127.0.0.1:\(port)/health/ready")!
    let deadline = ContinuousClock.now + .seconds(30)
    var last = "no answer"
    while ContinuousClock.now < deadline && process.isRunning {
      if let (body, response) = try? await session.data(from: url) {
        let status = (response as? HTTPURLResponse)?.statusCode ?? 0
        if status == 200 { return "ready" }
        last = "\(status) \(String(decoding: body.prefix(300), as: UTF8.self))"
      }
      try? await Task.sleep(for: .milliseconds(100))
    }
    return last
  }

  private static func answers(_ session: URLSession, port: Int) async -> Bool {
    (try? await session.data(from: URL(string: "http://127.0.0.1:\(port)/health/live")!)) != nil
  }

  private static func tail(_ path: String) -> String {
    let text = (try? String(contentsOfFile: path, encoding: .utf8)) ?? ""
    return text.split(separator: "\n").suffix(20).joined(separator: "\n")
  }

  /// `PUT path` with `body` (JSON) as `bearer`; throws unless it answers 2xx.
  func put(_ path: String, bearer: String, body: String? = nil) async throws {
    var request = URLRequest(url: URL(string: "http://127.0.0.1:\(port)\(path)")!)
    request.httpMethod = "PUT"
    request.setValue("Bearer \(bearer)", forHTTPHeaderField: "Authorization")
    if let body {
      request.setValue("application/json", forHTTPHeaderField: "Content-Type")
      request.httpBody = Data(body.utf8)
    }
    let (data, response) = try await session.data(for: request)
    let status = (response as? HTTPURLResponse)?.statusCode ?? 0
    guard (200..<300).contains(status) else {
      throw PushLoadTool.LoadError(
        description: "PUT \(path) answered \(status): \(String(decoding: data, as: UTF8.self))")
    }
  }

  /// The gateway's `/metrics`, as samples.
  func metrics() async throws -> MetricSamples {
    let (data, _) = try await session.data(from: URL(string: "http://127.0.0.1:\(port)/metrics")!)
    return MetricSamples(text: String(decoding: data, as: UTF8.self))
  }

  /// The largest resident set the process had (VmHWM), in MB.
  var peakResidentMB: Double {
    ProcessUsage.statusKilobytes("VmHWM", of: "\(process.processIdentifier)") / 1024
  }

  /// CPU time the process used so far (user and system), in seconds.
  var cpuSeconds: Double { ProcessUsage.cpuSeconds("\(process.processIdentifier)") }

  /// Stops it as an orchestrator would (SIGTERM: it drains and writes its journal), at most
  /// `seconds` before SIGKILL.
  func stop(seconds: Int = 20) async {
    guard process.isRunning else { return }
    process.terminate()
    let deadline = ContinuousClock.now + .seconds(seconds)
    while process.isRunning && ContinuousClock.now < deadline {
      try? await Task.sleep(for: .milliseconds(50))
    }
    if process.isRunning { kill(process.processIdentifier, SIGKILL) }
    process.waitUntilExit()
  }
}

/// Prometheus text exposition, read as far as the tool needs: sums of a metric's samples whose
/// labels include the given ones.
struct MetricSamples {
  private var samples: [(name: Substring, labels: Substring, value: Double)] = []

  init(text: String) {
    for line in text.split(separator: "\n") where !line.hasPrefix("#") {
      guard let space = line.lastIndex(of: " "), let value = Double(line[line.index(after: space)...])
      else { continue }
      let series = line[..<space]
      if let brace = series.firstIndex(of: "{") {
        samples.append((series[..<brace], series[brace...], value))
      } else {
        samples.append((series, "", value))
      }
    }
  }

  func sum(_ name: String, _ labels: [(String, String)] = []) -> Double {
    samples.filter { sample in
      sample.name == name && labels.allSatisfy { sample.labels.contains("\($0.0)=\"\($0.1)\"") }
    }.reduce(0) { $0 + $1.value }
  }

  /// The values of `label` among `name`'s samples, each with its sum.
  func byLabel(_ name: String, _ label: String) -> [String: Double] {
    var out: [String: Double] = [:]
    for sample in samples where sample.name == name {
      guard let range = sample.labels.range(of: "\(label)=\"") else { continue }
      let rest = sample.labels[range.upperBound...]
      guard let end = rest.firstIndex(of: "\"") else { continue }
      out[String(rest[..<end]), default: 0] += sample.value
    }
    return out
  }
}

extension GatewayProcess {
  /// `name` in the folder of the running executable (the tools and services build side by side).
  static func besideThisExecutable(_ name: String) -> String {
    let me =
      (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe"))
      ?? CommandLine.arguments[0]
    return URL(fileURLWithPath: me).deletingLastPathComponent().appendingPathComponent(name).path
  }
}
