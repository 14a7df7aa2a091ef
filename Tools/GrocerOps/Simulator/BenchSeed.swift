import Foundation
import GrocerContracts
import GrocerCore
import GrocerRuntime
import GrocerSQLite
import GrocerStorage
import TrackingService

/// `grocer seed-bench tracking --orders N [--hub ID] [--prefix P]`: creates the tracking of N
/// synthetic orders straight in the data directory, as `order.confirmed` would (through
/// `TrackingCommands.startTracking`, so each also gets its `tracking.updated` in the outbox), and prints
/// one line per order, `orderId<TAB>userId<TAB>destLat<TAB>destLng`. For the benchmark in
/// `Benchmarks/tracking/`: placing 5,000 real orders through Order/Cart/StockService would take
/// minutes and measure those services instead.
///
/// Each order has its own user (`P-u000001`, …) and a destination spread over a few kilometres
/// around central Berlin; the ids are the same for the same prefix, and seeding twice creates
/// nothing the second time (the inbox and the order id guard it, as for a redelivered event).
public enum BenchSeed {
  public static let usage = """
    usage: grocer seed-bench tracking --orders N [--hub ID] [--prefix P]

    Creates the tracking of N synthetic confirmed orders (placed, version 1) in GROCER_DATA_DIR
    and prints "orderId<TAB>userId<TAB>destLat<TAB>destLng" for each. Benchmarks only.

      --orders   how many, 1…100000 (required)
      --hub      the orders' hub (default h3)
      --prefix   of the order and user ids (default bench): P-o000001, P-u000001, …
    """

  /// What to seed.
  public struct Options: Sendable, Hashable {
    public var orders: Int
    public var hub: HubID = "h3"
    public var prefix = "bench"

    public init(orders: Int, hub: HubID = "h3", prefix: String = "bench") {
      self.orders = orders
      self.hub = hub
      self.prefix = prefix
    }
  }

  /// One seeded order.
  public struct SeededOrder: Sendable, Hashable {
    public var orderId: String
    public var userId: String
    public var destination: GeoPoint
  }

  /// A command-line mistake; its text goes above `usage`.
  public struct UsageError: Error, CustomStringConvertible, Hashable {
    public var description: String
  }

  public static func parse(_ arguments: [String]) throws -> Options {
    var options = Options(orders: 0)
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
        guard let count = Int(try value(flag)), (1...100_000).contains(count) else {
          throw UsageError(description: "--orders must be a whole number from 1 to 100000")
        }
        options.orders = count
      case "--hub": options.hub = try value(flag)
      case "--prefix":
        let prefix = try value(flag)
        guard Identifier.isValid(prefix + "-o000001") else {
          throw UsageError(description: "--prefix must be letters, digits, - or _")
        }
        options.prefix = prefix
      default: throw UsageError(description: "unknown argument \(flag)")
      }
    }
    guard options.orders > 0 else { throw UsageError(description: "--orders is required") }
    return options
  }

  /// The orders `options` describes, the same every time: order *i*'s destination lies on a
  /// spiral of up to ~4 km around (52.52, 13.405).
  public static func orders(_ options: Options) -> [SeededOrder] {
    (1...options.orders).map { index in
      let angle = Double(index) * 2.399_963  // the golden angle: evenly spread
      let radius = 0.035 * (Double(index % 97) + 1) / 97
      return SeededOrder(
        orderId: "\(options.prefix)-o\(padded(index))", userId: "\(options.prefix)-u\(padded(index))",
        destination: GeoPoint(lat: 52.52 + radius * sin(angle), lng: 13.405 + radius * 1.6 * cos(angle)))
    }
  }

  /// `index` in six digits at least (`000042`).
  static func padded(_ index: Int) -> String {
    let digits = String(index)
    return String(repeating: "0", count: max(0, 6 - digits.count)) + digits
  }

  /// Creates every order's tracking through `commands`, one transaction each (as the consumer does).
  /// Returns how many were new.
  public static func seed(
    _ orders: [SeededOrder], hub: HubID, into commands: TrackingCommands, consumer: String
  )
    throws -> Int
  {
    let now = Date()
    var created = 0
    for order in orders {
      let confirmed = OrderConfirmed(
        orderId: order.orderId, userId: order.userId, hub: hub, cartVersion: 1, lines: [],
        totals: .zero("EUR"), deliverTo: order.destination, paymentId: "pay-\(order.orderId)", placedAt: now)
      if try commands.startTracking(
        confirmed, messageID: "seed-\(order.orderId)", consumer: consumer, correlationID: nil)
      {
        created += 1
      }
    }
    return created
  }

  /// The command: opens the service's database in `configuration.dataDirectory`, seeds, and
  /// returns the lines to print.
  public static func run(_ options: Options, configuration: TrackingServiceConfiguration, logger: Logger)
    throws -> (created: Int, lines: [String])
  {
    try FileManager.default.createDirectory(
      atPath: configuration.dataDirectory, withIntermediateDirectories: true)
    let database = try SQLiteDatabase(
      path: configuration.databasePath, migrations: TrackingSchema.migrations, logger: logger)
    defer { database.close() }
    let commands = TrackingCommands(
      store: TrackingStore(database: database), clock: SystemClock(), ids: RandomIDs())
    let seeded = orders(options)
    let created = try seed(seeded, hub: options.hub, into: commands, consumer: configuration.serviceName)
    return (
      created,
      seeded.map { "\($0.orderId)\t\($0.userId)\t\($0.destination.lat)\t\($0.destination.lng)" }
    )
  }
}
