/// A product's counts at a hub and its version: the rules for how holds, commits and stock takes
/// move them.
///
/// `version` is the `sequence` of the product's `stock.changed`: it rises by one on every change
/// that a cache or a cart could use, so a change that leaves `available` where it was (a normal
/// commit) keeps it.
public struct StockLevel: Hashable, Sendable {
  public var onHand: Int
  /// What open reservations hold of `onHand`.
  public var held: Int
  public var version: Int64

  public init(onHand: Int, held: Int, version: Int64) {
    self.onHand = onHand
    self.held = held
    self.version = version
  }

  /// What can be ordered: on hand minus what is held, never below 0.
  public var available: Int { max(0, onHand - held) }

  /// Moves `quantity` into (or, negative, out of) what is held, never below 0 held. A new
  /// version whatever moved: a reservation or a release is always published.
  public mutating func hold(_ quantity: Int) {
    held = max(0, held + quantity)
    version += 1
  }

  /// What a change of held or on hand did.
  public struct Taking: Hashable, Sendable {
    /// Whether the change is published (for a taking: `available` moved and the version rose).
    public var publishes: Bool
    /// Whether the order took more than was on hand (an oversold shelf; worth a warning).
    public var oversold: Bool

    public init(publishes: Bool, oversold: Bool) {
      self.publishes = publishes
      self.oversold = oversold
    }
  }

  /// Takes a paid order's `quantity` off on hand (and off held, when `heldToo`: it was still
  /// held), neither below 0. A normal commit takes as much off held as off on hand, so what can
  /// be ordered does not move and neither does the version; a confirmation after the hold expired,
  /// or an oversold shelf, moves it.
  public mutating func take(_ quantity: Int, heldToo: Bool) -> Taking {
    let before = available
    let oversold = onHand < quantity
    onHand = max(0, onHand - quantity)
    held = max(0, held - (heldToo ? quantity : 0))
    let moved = available != before
    if moved { version += 1 }
    return Taking(publishes: moved, oversold: oversold)
  }

  /// Sets on hand to `target` (what is held stays held). False, and nothing changes, when it is
  /// on hand already.
  public mutating func count(_ target: Int) -> Bool {
    guard target != onHand else { return false }
    onHand = target
    version += 1
    return true
  }
}
