import Foundation
import GrocerContracts
import Synchronization

/// Reads missed counts from the database at most once at a time per (hub, SKU): when a popular
/// entry expires or is invalidated, the requests that miss it together share one read instead
/// of each asking the database (SPEC: "refreshed from the database at most once per entry").
final class StockMissLoader: Sendable {
  /// Reads the given SKUs; returns their rows and when the read began.
  typealias Load = @Sendable ([SKU]) async throws -> (rows: [StockRow], readAt: Date)

  private struct Loaded: Sendable {
    var rows: [SKU: StockRow]
    var readAt: Date
  }

  /// Reads in flight, with the cache epoch their request saw: a request that missed because an
  /// entry was invalidated must not join a read that may have begun before the change.
  private let inFlight = Mutex<[Key: (task: Task<Loaded, any Error>, epoch: UInt64)]>([:])

  private struct Key: Hashable {
    var hub: HubID
    var sku: SKU
  }

  /// The rows for `skus` at `hub` and the oldest time they were read: those already being read
  /// are awaited, the rest are read with one call of `load`, which later callers for the same
  /// SKUs share until it finishes. If this call reads, it reads `alsoRefresh()` too (the hub's
  /// other aged-out entries; those already being read are left out), so requests that need
  /// them meanwhile wait for this read instead of making their own. `alsoRefresh` is asked only
  /// by the call that reads: when a whole hub ages out at once, the requests joining its read
  /// neither walk the cache for it again nor copy the thousands of rows it brings.
  func rows(
    hub: HubID, skus: [SKU], epoch: UInt64, alsoRefresh: () -> [SKU] = { [] }, load: @escaping Load
  ) async throws -> (rows: [StockRow], readAt: Date) {
    var waits: [Task<Loaded, any Error>] = []
    let own: (task: Task<Loaded, any Error>, skus: [SKU])? = inFlight.withLock { map in
      var mine: [SKU] = []
      for sku in skus {
        if let running = map[Key(hub: hub, sku: sku)], running.epoch == epoch {
          if !waits.contains(running.task) { waits.append(running.task) }
        } else {
          mine.append(sku)
        }
      }
      guard !mine.isEmpty else { return nil }
      var asked = Set(mine)
      for sku in alsoRefresh() where map[Key(hub: hub, sku: sku)] == nil && asked.insert(sku).inserted {
        mine.append(sku)
      }
      let task = Task { [mine] in
        let (rows, readAt) = try await load(mine)
        return Loaded(
          rows: Dictionary(rows.map { ($0.sku, $0) }, uniquingKeysWith: { first, _ in first }), readAt: readAt
        )
      }
      for sku in mine { map[Key(hub: hub, sku: sku)] = (task, epoch) }
      return (task, mine)
    }
    var loads: [Loaded] = []
    if let own {
      let result = await own.task.result
      inFlight.withLock { map in
        for sku in own.skus where map[Key(hub: hub, sku: sku)]?.task == own.task {
          map[Key(hub: hub, sku: sku)] = nil
        }
      }
      loads.append(try result.get())
    }
    for wait in waits { loads.append(try await wait.value) }
    // Each SKU from the first read that has it; the reads are not merged (one may hold a hub).
    let rows = skus.compactMap { sku in loads.lazy.compactMap { $0.rows[sku] }.first }
    return (rows, loads.map(\.readAt).min() ?? .distantFuture)
  }
}
