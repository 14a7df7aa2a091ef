import Foundation
import GrocerAMQP
import GrocerCore
import GrocerRuntime

/// The operators' commands behind `grocer`: parsing (`GrocerCommand.parse`) and running
/// (`GrocerOps.main`), in a library so that both are tested in-process.
public enum GrocerOps {
  /// `grocer help`: every command, one line each.
  public static let usage = """
    usage: grocer <command> [arguments]

    Commands (run from the repository root; they read the services' environment variables):
      token <user> [--role customer|staff|rider] [--hub h1 | --hubs h1,h2|*] [--ttl seconds]
                                  print an HS256 token (GROCER_JWT_SECRET or the local default)
      demo load [--data-dir DIR] [--bin-dir DIR]
                                  load the demo assortment (hubs h1-h3) and promo codes, as make run does
      queues [<text>]             every queue (names containing <text>): ready, unacked, consumers
      dead-letters [<queue>] [--limit N]
                                  show (without removing) the messages in <queue>.parking, or in every
                                  parking queue that holds some
      republish <queue> (--message-id ID | --all) [--limit N]
                                  publish parked messages of <queue>.parking again to grocer.events
                                  (routing key = their type), then remove them from the parking queue
      parking migrate             replace older builds' classic parking queues with quorum ones,
                                  keeping their messages
      area set <hub> <file.geojson> [--priority N]
                                  set a hub's delivery area from a GeoJSON Polygon or MultiPolygon
      area which <lat> <lng>      print the hub that delivers to a point (or outOfArea)
      simulate [--orders N] [--speedup F] [--hub ID] [--sku SKU] [--quantity N] [--base-url URL]
                                  drive orders from placed to delivered through the gateway
      load push [--orders N] [--rate N] [--seconds N] [--budget N] [--starts N] [--chart FILE]
                                  the push load tool (notify-gateway beside grocer as a process of
                                  its own, real broker)
      seed-bench tracking --orders N [--hub ID] [--prefix P]
                                  create N synthetic tracked orders in GROCER_DATA_DIR (Benchmarks/tracking)
      load stock|cart|order|tracking|outbox-relay|push-bench|catalogue
                                  print how to run that benchmark (Benchmarks/)
      help                        this text

    Environment: GROCER_AMQP_URL (broker), GROCER_JWT_SECRET, GROCER_GATEWAY_PORT,
    GROCER_VAR_DIR (var), GROCER_BIN_DIR (.build/release), GROCER_RABBITMQ_SCRIPT
    (deploy/local/rabbitmq.sh: `queues` runs its `ctl list_queues`).
    Exit status: 0 done, 1 failed, 2 bad arguments.
    """

  /// Parses and runs one command line (the arguments after `grocer`); returns the exit status:
  /// 0 done, 1 failed (message on `console.err`), 2 bad arguments (message and usage on
  /// `console.err`).
  public static func main(arguments: [String], settings: Settings, console: Console) async -> Int32 {
    let command: GrocerCommand
    do {
      command = try GrocerCommand.parse(arguments, settings: settings)
    } catch {
      console.err("grocer: \(error.message)\n\n\(error.usage)")
      return 2
    }
    do {
      return try await command.run(OpsEnvironment(settings: settings), console: console)
    } catch let error as CommandFailure {
      console.err("grocer: \(error.message)")
      return 1
    } catch {
      console.err("grocer: \(error)")
      return 1
    }
  }
}

/// Where a command writes: `out` for its result, `err` for progress and errors. Each call is one
/// chunk of text; a line end is added.
public struct Console: Sendable {
  public var out: @Sendable (String) -> Void
  public var err: @Sendable (String) -> Void

  public init(out: @escaping @Sendable (String) -> Void, err: @escaping @Sendable (String) -> Void) {
    self.out = out
    self.err = err
  }

  /// The process's stdout and stderr.
  public static let standard = Console(
    out: { FileHandle.standardOutput.write(Data(($0 + "\n").utf8)) },
    err: { FileHandle.standardError.write(Data(($0 + "\n").utf8)) })
}

/// Bad arguments: `message`, then `usage` (of the command concerned), on stderr; exit 2.
public struct UsageError: Error, Hashable, Sendable, CustomStringConvertible {
  public var message: String
  public var usage: String
  public init(_ message: String, usage: String = GrocerOps.usage) {
    self.message = message
    self.usage = usage
  }
  public var description: String { message }
}

/// A command that could not do its work: `message` on stderr, exit 1.
public struct CommandFailure: Error, Hashable, Sendable, CustomStringConvertible {
  public var message: String
  public init(_ message: String) { self.message = message }
  public var description: String { message }
}

/// What the commands read from the environment, resolved once.
public struct OpsEnvironment: Sendable {
  public var settings: Settings
  /// The broker (`GROCER_AMQP_URL`).
  public var amqp: AMQPConfiguration
  /// `GROCER_VAR_DIR` (default `var`, relative to the working directory like the services').
  public var varDirectory: String
  /// `GROCER_BIN_DIR` (default `.build/release`).
  public var binDirectory: String
  /// Logs of the in-process tools (warnings and worse, on stderr).
  public var logger: Logger

  public init(settings: Settings, logger: Logger? = nil) {
    self.settings = settings
    self.amqp = AMQPConfiguration(settings: settings, connectionName: "grocer")
    self.varDirectory = settings.string("GROCER_VAR_DIR", default: "var")
    self.binDirectory = settings.string("GROCER_BIN_DIR", default: ".build/release")
    self.logger =
      logger
      ?? Logger(
        label: "grocer",
        level: Logger.Level(name: settings.string("GROCER_LOG_LEVEL", default: "warning")) ?? .warning)
  }

  /// The `rabbitmq.sh` whose `ctl` runs `rabbitmqctl` against the local node:
  /// `GROCER_RABBITMQ_SCRIPT`, else `deploy/local/rabbitmq.sh` under the working directory, else
  /// next to the executable's checkout (`<repo>/.build/<config>/grocer`).
  public var rabbitMQScript: String {
    if let script = settings.values["GROCER_RABBITMQ_SCRIPT"], !script.isEmpty { return script }
    let local = "deploy/local/rabbitmq.sh"
    if FileManager.default.fileExists(atPath: local) { return local }
    let executable = URL(fileURLWithPath: CommandLine.arguments.first ?? "").resolvingSymlinksInPath()
    let beside = executable.deletingLastPathComponent().deletingLastPathComponent()
      .deletingLastPathComponent().appendingPathComponent(local).path
    return FileManager.default.fileExists(atPath: beside) ? beside : local
  }

  /// The broker's virtual host, from `GROCER_AMQP_URL` (`/` when the path is empty).
  public var virtualHost: String {
    guard let components = URLComponents(string: amqp.url) else { return "/" }
    let path = components.percentEncodedPath
    guard path.count > 1 else { return "/" }
    let name = String(path.dropFirst())
    return name.removingPercentEncoding ?? name
  }
}

/// `--name value` / `--name=value` options, boolean `--flags` and positional arguments.
struct ParsedArguments {
  var positional: [String] = []
  var options: [String: String] = [:]
  var flags: Set<String> = []

  init(
    _ arguments: [String], options allowed: Set<String>, flags allowedFlags: Set<String> = [], usage: String
  )
    throws(UsageError)
  {
    var rest = arguments[...]
    while let argument = rest.popFirst() {
      // A negative number (a longitude west of Greenwich) is a value, not an option.
      guard
        argument.hasPrefix("--") || (argument.hasPrefix("-") && argument.count > 1 && Double(argument) == nil)
      else {
        positional.append(argument)
        continue
      }
      var name = argument
      var inline: String?
      if let equals = argument.firstIndex(of: "=") {
        name = String(argument[..<equals])
        inline = String(argument[argument.index(after: equals)...])
      }
      if allowedFlags.contains(name), inline == nil {
        flags.insert(name)
        continue
      }
      guard allowed.contains(name) else { throw UsageError("unknown option \(name)", usage: usage) }
      guard let value = inline ?? rest.popFirst() else {
        throw UsageError("\(name) needs a value", usage: usage)
      }
      guard options.updateValue(value, forKey: name) == nil else {
        throw UsageError("\(name) given more than once", usage: usage)
      }
    }
  }

  func positiveInt(_ name: String, default fallback: Int, maximum: Int = 1_000_000, usage: String)
    throws(UsageError) -> Int
  {
    guard let text = options[name] else { return fallback }
    guard let value = Int(text), value >= 1, value <= maximum else {
      throw UsageError("\(name) needs a whole number from 1 to \(maximum), got \(text)", usage: usage)
    }
    return value
  }
}
