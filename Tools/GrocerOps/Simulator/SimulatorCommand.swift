import Foundation
import GrocerCore
import GrocerRuntime
import TrackingService

/// `grocer simulate [--orders N] [--speedup F] [--hub ID] [--sku SKU] [--quantity N]
/// [--base-url URL]`: the simulator's command line, parsed here (not in `main`) so its rules
/// are tested as a function. The token secret is GROCER_JWT_SECRET, as for the services.
public enum SimulatorCommand {
  public static let usage = """
    usage: grocer simulate [--orders N] [--speedup F] [--hub ID] [--sku SKU]
                                     [--quantity N] [--base-url URL]

    Drives N orders from placed to delivered through the public API, as customers, hub staff
    and riders would, with a rider fix every 5 s (divided by the speed-up).

      --orders     how many orders, 1…10000 (default 5)
      --speedup    divide every wait by this, 0.1…1000 (default 1)
      --hub        the hub to order at (default h3, open all day in the demo)
      --sku        the product to order (default p00002), --quantity how many (default 2)
      --base-url   the gateway (default http://127.0.0.1:$GROCER_GATEWAY_PORT, port 8080)
    """

  public struct UsageError: Error, CustomStringConvertible, Hashable {
    public var description: String
  }

  public static func parse(_ arguments: [String], settings: Settings) throws -> TrackingSimulator.Options {
    let port = settings.int("GROCER_GATEWAY_PORT", default: 8080)
    var options = TrackingSimulator.Options(
      baseURL: URL(string: "http://127.0.0.1:\(port)")!,
      secret: settings.string("GROCER_JWT_SECRET", default: Settings.localJWTSecret))
    var rest = arguments[...]
    func value(_ flag: String) throws -> String {
      guard let value = rest.popFirst(), !value.hasPrefix("--") else {
        throw UsageError(description: "\(flag) needs a value")
      }
      return value
    }
    while let flag = rest.popFirst() {
      switch flag {
      case "--orders":
        guard let count = Int(try value(flag)), (1...10_000).contains(count) else {
          throw UsageError(description: "--orders must be a whole number from 1 to 10000")
        }
        options.orders = count
      case "--speedup":
        guard let factor = Double(try value(flag)), (0.1...1000).contains(factor) else {
          throw UsageError(description: "--speedup must be a number from 0.1 to 1000")
        }
        options.speedup = factor
      case "--hub": options.hub = try value(flag)
      case "--sku": options.sku = try value(flag)
      case "--quantity":
        guard let quantity = Int(try value(flag)), (1...99).contains(quantity) else {
          throw UsageError(description: "--quantity must be a whole number from 1 to 99")
        }
        options.quantity = quantity
      case "--base-url":
        let text = try value(flag)
        guard let url = URL(string: text), url.scheme == "http" || url.scheme == "https", url.host != nil
        else {
          throw UsageError(description: "--base-url must be an http(s) URL, not \(text)")
        }
        options.baseURL = url
      default:
        throw UsageError(description: "unknown argument \(flag)")
      }
    }
    return options
  }
}
