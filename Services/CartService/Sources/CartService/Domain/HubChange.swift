import GrocerContracts
import GrocerCore

/// What a `hub.changed` does to the catalogue copy and to the carts at that hub.
struct HubChange: Sendable {
  var event: HubChanged
  var version: Int64
  /// The copy before the event, with its version; nil for a hub the copy did not know.
  var old: (version: Int64, hub: HubChanged)?

  /// Whether the copy takes the event: it is newer than what the copy holds.
  var isNewer: Bool { old.map { $0.version < version } ?? true }

  /// Whether every non-empty cart at the hub gets a new version: a change of pricing, hours or
  /// currency changes its totals or its blocker.
  var touchesCarts: Bool {
    guard isNewer, let previous = old?.hub else { return false }
    return previous.pricing != event.pricing || previous.hours != event.hours
      || previous.currency != event.currency
  }
}
