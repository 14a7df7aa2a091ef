import Foundation

/// Push-to-start (iOS 17.2+): whether the gateway starts an order's Live Activity itself, on a
/// device whose app registered a start token. An order confirmed without an activity token
/// `after` seconds later (placed on the web, or the app went to the background first) gets one,
/// within `budget` starts per device in any `window` (Apple allows only a few): over it, an alert
/// says where to follow the order instead.
public struct LiveActivityStartPolicy: Sendable, Hashable {
  /// How long after the order's confirmation the app has to start the activity itself.
  public var after: TimeInterval
  public var budget: Int
  public var window: TimeInterval = 3600

  public init(after: TimeInterval = 20, budget: Int = 3) {
    self.after = after
    self.budget = budget
  }

  public enum Decision: Sendable, Hashable {
    /// The order has an activity already (the app started it): nothing.
    case notNeeded
    /// Start it on this device.
    case start
    /// The device's starts are used up: an alert instead.
    case alertInstead
  }

  /// The decision for one device whose starts were sent at `recent`, and its starts afterwards
  /// (only those inside the window are kept).
  public func decide(hasActivity: Bool, recent: [Date], now: Date) -> (Decision, [Date]) {
    let kept = recent.filter { now.timeIntervalSince($0) < window }
    if hasActivity { return (.notNeeded, kept) }
    guard kept.count < budget else { return (.alertInstead, kept) }
    return (.start, kept + [now])
  }
}

extension AlertText {
  /// A start the device's budget did not allow: where to follow the order instead.
  public static let followInApp = AlertText(
    title: "Order confirmed", body: "Open Grocer to follow your order on the Lock Screen.")
}
