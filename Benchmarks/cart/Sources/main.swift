import CartService
import Foundation
import GrocerContracts
import GrocerCore
import GrocerRuntime

/// CartService's writer capacity without HTTP: `CartCommands.setQuantity` (one transaction with its
/// `cart.changed` outbox row) on 1,000 carts over SKUS products, queued on the database's writer
/// queue the way the HTTP handlers queue it (so they commit in groups), plus `CartCommands.cart`
/// reads. The outbox is not relayed (no broker), so it grows during the run.
///
/// `grocer-bench-cart-store [WRITES] [DATA_DIR] [SKUS]` (SKUS 200 by default: carts of ~23
/// lines); prints `RESULT writes_per_s=… us_per_write=…`.
let arguments = CommandLine.arguments.dropFirst()
let writes = arguments.first.flatMap(Int.init) ?? 20_000
let directory =
  arguments.dropFirst().first ?? NSTemporaryDirectory() + "grocer-bench-cart-store-\(getpid())"
defer { try? FileManager.default.removeItem(atPath: directory) }

let users = 1_000
let skus = arguments.dropFirst(2).first.flatMap(Int.init) ?? 200
var configuration = CartServiceConfiguration(settings: Settings(["GROCER_DATA_DIR": directory]))
configuration.serviceName = "cart-bench-store"
configuration.publishesCartChanges = true  // as the HTTP benchmark measures: the dearer case
let app = try buildCartService(configuration: configuration, logger: .discarding())
let commands = app.commands

func eur(_ units: Int) -> Money { Money(minorUnits: units, currency: "EUR") }
let hub = HubChanged(
  hub: Hub(
    id: "h1", name: "Bench", hours: .daily(opens: .midnight, closes: .endOfDay),
    pricing: PricingSettings(minimumOrder: eur(1000), deliveryFee: eur(299), freeDeliveryFrom: eur(3000)),
    currency: "EUR"))
try commands.applyCatalogue(
  hubs: [Versioned(hub, version: 1)],
  products: (1...skus).map { index in
    Versioned(
      StockChanged(
        hub: "h1", sku: String(format: "p%05d", index), name: "Bench product \(index) 500 g",
        available: 10_000, price: eur(99 + index), deposit: index % 4 == 0 ? eur(25) : nil),
      version: 1)
  })
try commands.markCatalogueSynced()

var generator = SplitMix64(seed: 7)
let plan: [(user: String, sku: SKU, quantity: Int)] = (0..<writes).map { index in
  let user = "bench-u\(generator.next() % UInt64(users))"
  let sku = String(format: "p%05d", Int(generator.next() % UInt64(skus)) + 1)
  return (user, sku, index % 5 + 1)
}

let started = ContinuousClock.now
try await withThrowingTaskGroup(of: Void.self) { group in
  for (index, step) in plan.enumerated() {
    group.addTask {
      _ = try await commands.store.database.onWriterQueue {
        try commands.setQuantity(
          user: step.user, hub: "h1", sku: step.sku, quantity: step.quantity, seenVersion: nil,
          correlationID: nil)
      }
    }
    if index >= 64 { try await group.next() }
  }
  try await group.waitForAll()
}
let elapsed = ContinuousClock.now - started
let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
let lines = try commands.cart(user: "bench-u1", hub: "h1", seenVersion: nil).lines.count

let readStart = ContinuousClock.now
for index in 0..<writes {
  _ = try commands.cart(user: "bench-u\(index % users)", hub: "h1", seenVersion: 0)
}
let readElapsed = ContinuousClock.now - readStart
let readSeconds = Double(readElapsed.components.seconds) + Double(readElapsed.components.attoseconds) / 1e18
print(
  String(
    format:
      "RESULT writes=%d writes_per_s=%.0f us_per_write=%.1f lines_per_cart=%d reads_per_s=%.0f "
      + "us_per_read=%.1f",
    writes, Double(writes) / seconds, seconds / Double(writes) * 1e6, lines, Double(writes) / readSeconds,
    readSeconds / Double(writes) * 1e6))
