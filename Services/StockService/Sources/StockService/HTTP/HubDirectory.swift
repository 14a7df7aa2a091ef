import GrocerContracts
import Synchronization

/// The hubs this replica knows exist, kept in memory so the hot path never asks the database
/// whether a hub exists. Filled at start, by local writes and by `hub.changed` events from
/// other replicas; a hub not found here is looked up in the database before a 404.
final class HubDirectory: Sendable {
  private let hubs = Mutex<Set<HubID>>([])

  func contains(_ hub: HubID) -> Bool { hubs.withLock { $0.contains(hub) } }
  func insert(_ hub: HubID) { hubs.withLock { _ = $0.insert(hub) } }
  func replace(with all: Set<HubID>) { hubs.withLock { $0 = all } }
}
