import Foundation
import GrocerCore
import GrocerRuntime
import StockService

/// `grocer demo load [--data-dir DIR] [--bin-dir DIR]`: what `make run` does once per data
/// folder: `stock-service load-demo` (hubs h1–h3, about 3,000 products each) and
/// `cart-service load-demo` (the promo codes SPRING, WELCOME5, H1ONLY).
///
/// The stock assortment is loaded in this process (`loadDemoAssortment`, into
/// `<data>/stock`); the promo codes by running `<bin>/cart-service load-demo` with
/// `GROCER_DATA_DIR=<data>/cart` (GrocerOps does not depend on CartService). Both are idempotent,
/// and each leaves the marker `deploy/local/services.sh` checks, so `make run` does not repeat
/// them. Safe while the services run (SQLite, WAL): new rows go out as events through each
/// service's outbox.
public struct DemoLoadCommand: Sendable, Hashable {
  public static let usage = """
    usage: grocer demo load [--data-dir DIR] [--bin-dir DIR]

    Loads the demo assortment into StockService's data (DIR/stock: hubs h1-h3, about 3,000
    products each) and the demo promo codes into CartService's (DIR/cart, by running
    cart-service load-demo from the bin dir), as `make run` does the first time. Idempotent.
      --data-dir   the services' data folders (default $GROCER_VAR_DIR/data, i.e. var/data)
      --bin-dir    where cart-service is (default $GROCER_BIN_DIR, i.e. .build/release)
    """

  public var dataDirectory: String
  public var binDirectory: String

  public init(dataDirectory: String, binDirectory: String) {
    self.dataDirectory = dataDirectory
    self.binDirectory = binDirectory
  }

  static func parse(_ arguments: [String], settings: Settings) throws(UsageError) -> DemoLoadCommand {
    let parsed = try ParsedArguments(arguments, options: ["--data-dir", "--bin-dir"], usage: usage)
    guard parsed.positional.isEmpty else {
      throw UsageError("unexpected argument \(parsed.positional[0])", usage: usage)
    }
    let environment = OpsEnvironment(settings: settings, logger: Logger.discarding())
    return DemoLoadCommand(
      dataDirectory: parsed.options["--data-dir"] ?? environment.varDirectory + "/data",
      binDirectory: parsed.options["--bin-dir"] ?? environment.binDirectory)
  }

  /// services.sh's marker for a set-up subcommand that ran in a data folder.
  static let marker = ".setup-load-demo.done"

  func run(_ environment: OpsEnvironment, console: Console) async throws {
    let stockFolder = dataDirectory + "/stock"
    let cartFolder = dataDirectory + "/cart"
    try FileManager.default.createDirectory(atPath: stockFolder, withIntermediateDirectories: true)
    try FileManager.default.createDirectory(atPath: cartFolder, withIntermediateDirectories: true)

    var values = environment.settings.values
    values["GROCER_DATA_DIR"] = stockFolder
    let loaded: Bool
    do {
      loaded = try loadDemoAssortment(
        configuration: StockServiceConfiguration(settings: Settings(values)), logger: environment.logger)
    } catch {
      throw CommandFailure("loading the demo assortment into \(stockFolder) failed: \(error)")
    }
    _ = FileManager.default.createFile(atPath: stockFolder + "/" + Self.marker, contents: nil)
    console.out(
      "stock: " + (loaded ? "demo assortment loaded into \(stockFolder)" : "demo assortment already present"))

    let cartService = binDirectory + "/cart-service"
    guard FileManager.default.isExecutableFile(atPath: cartService) else {
      throw CommandFailure(
        "\(cartService) is missing: build it first (swift build -c release, or make build)")
    }
    var cartEnvironment = ProcessInfo.processInfo.environment
    cartEnvironment["GROCER_DATA_DIR"] = cartFolder
    let outcome = try await Subprocess.run([cartService, "load-demo"], environment: cartEnvironment)
    guard outcome.status == 0 else {
      throw CommandFailure("cart-service load-demo failed (exit \(outcome.status)): \(outcome.output)")
    }
    _ = FileManager.default.createFile(atPath: cartFolder + "/" + Self.marker, contents: nil)
    let said = outcome.output.split(separator: "\n").last(where: { $0.hasPrefix("demo promo codes") })
    console.out("cart: " + (said.map(String.init) ?? "demo promo codes defined"))
  }
}
