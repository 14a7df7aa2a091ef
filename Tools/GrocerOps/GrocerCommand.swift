import Foundation
import GrocerAuth
import GrocerCore
import GrocerRuntime
import NotifyGateway
import TrackingService

/// One parsed `grocer` command line.
public enum GrocerCommand: Sendable {
  case help
  case token(TokenCommand)
  case demoLoad(DemoLoadCommand)
  case queues(QueuesCommand)
  case deadLetters(DeadLettersCommand)
  case republish(RepublishCommand)
  case parking(ParkingCommand)
  case area(AreaCommand)
  case simulate(TrackingSimulator.Options)
  case loadPush(PushLoadTool.Options)
  case seedTrackingBench(BenchSeed.Options)
  case benchmark(BenchmarkCommand)

  /// `grocer token`'s help: `grocer-token`'s, with `--hub` as a synonym of `--hubs`.
  public static let tokenUsage =
    TokenCommand.usage.replacingOccurrences(of: "grocer-token", with: "grocer token")
    .replacingOccurrences(of: "[--hubs h1,h2|*]", with: "[--hub h1 | --hubs h1,h2|*]")

  public static let simulateUsage = SimulatorCommand.usage

  public static let loadUsage = """
    usage: grocer load push [--orders N] [--rate N] [--seconds N] [--budget N] [--starts N] [--chart FILE]
           grocer load stock|cart|order|tracking|outbox-relay|push-bench|catalogue

    push: the push load tool: a NotifyGateway with its APNs simulator in
    this process, fed through the broker; --orders activities (2000), --rate tracking.updated per
    second (1000), --seconds (60), --budget priority-10 pushes per hour (12), --starts orders
    confirmed over the run that the gateway starts by push-to-start (0), --chart an SVG.
    The others print the benchmark's command (Benchmarks/README.md; `make bench` runs them all).
    """

  /// Parses the arguments after `grocer`.
  public static func parse(_ arguments: [String], settings: Settings) throws(UsageError) -> GrocerCommand {
    guard let name = arguments.first else { throw UsageError("no command given") }
    let rest = Array(arguments.dropFirst())
    switch name {
    case "help", "-h", "--help":
      return .help
    case "token":
      // `--hub h1` is `--hubs h1`.
      let translated = rest.map { argument in
        argument == "--hub"
          ? "--hubs" : argument.hasPrefix("--hub=") ? "--hubs=" + argument.dropFirst(6) : argument
      }
      do {
        switch try TokenCommand.parse(arguments: translated) {
        case .help: return .help
        case .mint(let command): return .token(command)
        }
      } catch {
        throw UsageError(error.message, usage: tokenUsage)
      }
    case "demo":
      guard rest.first == "load" else {
        throw UsageError("expected `grocer demo load`", usage: DemoLoadCommand.usage)
      }
      return .demoLoad(try DemoLoadCommand.parse(Array(rest.dropFirst()), settings: settings))
    case "queues":
      return .queues(try QueuesCommand.parse(rest))
    case "dead-letters":
      return .deadLetters(try DeadLettersCommand.parse(rest))
    case "republish":
      return .republish(try RepublishCommand.parse(rest))
    case "parking":
      return .parking(try ParkingCommand.parse(rest))
    case "area":
      return .area(try AreaCommand.parse(rest, settings: settings))
    case "simulate":
      do {
        return .simulate(try SimulatorCommand.parse(rest, settings: settings))
      } catch {
        throw UsageError("\(error)", usage: simulateUsage)
      }
    case "load":
      return try parseLoad(rest, settings: settings)
    case "seed-bench":
      guard rest.first == "tracking" else {
        throw UsageError("expected `grocer seed-bench tracking`", usage: BenchSeed.usage)
      }
      do {
        return .seedTrackingBench(try BenchSeed.parse(Array(rest.dropFirst())))
      } catch {
        throw UsageError("\(error)", usage: BenchSeed.usage)
      }
    default:
      throw UsageError("unknown command \(name)")
    }
  }

  private static func parseLoad(_ arguments: [String], settings: Settings) throws(UsageError) -> GrocerCommand
  {
    guard let what = arguments.first else { throw UsageError("load what?", usage: loadUsage) }
    let rest = Array(arguments.dropFirst())
    if what == "push" {
      let parsed = try ParsedArguments(
        rest, options: ["--orders", "--rate", "--seconds", "--budget", "--starts", "--chart"],
        usage: loadUsage)
      guard parsed.positional.isEmpty else {
        throw UsageError("unexpected argument \(parsed.positional[0])", usage: loadUsage)
      }
      var options = PushLoadTool.Options(settings: settings)
      options.orders = try parsed.positiveInt("--orders", default: options.orders, usage: loadUsage)
      options.rate = try parsed.positiveInt("--rate", default: options.rate, usage: loadUsage)
      options.seconds = try parsed.positiveInt("--seconds", default: options.seconds, usage: loadUsage)
      if let budget = parsed.options["--budget"] {
        guard let value = Int(budget), value >= 0 else {
          throw UsageError("--budget needs a whole number from 0, got \(budget)", usage: loadUsage)
        }
        options.hourlyBudget = value
      }
      if let starts = parsed.options["--starts"] {
        guard let value = Int(starts), value >= 0 else {
          throw UsageError("--starts needs a whole number from 0, got \(starts)", usage: loadUsage)
        }
        options.starts = value
      }
      options.chartPath = parsed.options["--chart"]
      return .loadPush(options)
    }
    guard rest.isEmpty else { throw UsageError("unexpected argument \(rest[0])", usage: loadUsage) }
    guard let benchmark = BenchmarkCommand(name: what) else {
      throw UsageError("unknown load \(what)", usage: loadUsage)
    }
    return .benchmark(benchmark)
  }

  /// Runs the command; returns the exit status (a failure throws `CommandFailure`).
  public func run(_ environment: OpsEnvironment, console: Console) async throws -> Int32 {
    switch self {
    case .help:
      console.out(GrocerOps.usage)
    case .token(let command):
      console.out(command.token(settings: environment.settings, now: Date()))
    case .demoLoad(let command):
      try await command.run(environment, console: console)
    case .queues(let command):
      try await command.run(environment, console: console)
    case .deadLetters(let command):
      try await command.run(environment, console: console)
    case .republish(let command):
      try await command.run(environment, console: console)
    case .parking(let command):
      try await command.run(environment, console: console)
    case .area(let command):
      try await command.run(console: console)
    case .simulate(let options):
      console.err("simulating \(options.orders) orders at \(options.baseURL) (speed-up \(options.speedup))…")
      let report = await TrackingSimulator(options: options, logger: environment.logger).run()
      console.out("\(report)")
      return report.failures.isEmpty ? 0 : 1
    case .loadPush(let options):
      let quiet = Logger(label: "push-load", level: .warning)
      let report = try await PushLoadTool(options: options, logger: quiet).run { line in
        FileHandle.standardError.write(Data("\r\(line)   ".utf8))
      }
      console.err("")
      console.out("\(report)")
      if let chart = options.chartPath { console.out("chart: \(chart)") }
    case .seedTrackingBench(let options):
      let configuration = TrackingServiceConfiguration(settings: environment.settings)
      let (created, lines) = try BenchSeed.run(
        options, configuration: configuration, logger: environment.logger)
      console.out(lines.joined(separator: "\n"))
      console.err("seed-bench: \(created) of \(lines.count) orders created")
    case .benchmark(let benchmark):
      console.out(benchmark.instructions)
    }
    return 0
  }
}

/// `grocer load <benchmark>`: prints how to run one of `Benchmarks/*/run.sh`.
public struct BenchmarkCommand: Sendable, Hashable {
  /// The folder under `Benchmarks/`.
  public var folder: String

  public init?(name: String) {
    switch name {
    case "stock", "stock-lookup": folder = "stock-lookup"
    case "cart": folder = "cart"
    case "order", "orders": folder = "order"
    case "tracking": folder = "tracking"
    case "outbox", "outbox-relay": folder = "outbox-relay"
    case "push-bench": folder = "push"
    case "catalogue", "screens": folder = "catalogue"
    default: return nil
    }
  }

  public var instructions: String {
    """
    Benchmarks/\(folder)/run.sh measures it against the release build and the local broker
    (it starts what it measures on its own ports and data, and stops it). From the repository root:

      swift build -c release && bash deploy/local/rabbitmq.sh start
      GROCER_BIN_DIR=.build/release GROCER_RABBITMQ_SCRIPT=deploy/local/rabbitmq.sh bash Benchmarks/\(folder)/run.sh

    `make bench` runs every benchmark; Benchmarks/README.md explains the numbers.
    """
  }
}
