import Foundation
import GrocerContracts

/// An alert's text, and the texts NotifyGateway sends for each moment of an order.
public struct AlertText: Codable, Hashable, Sendable {
  public var title: String
  public var body: String

  public init(title: String, body: String) {
    self.title = title
    self.body = body
  }

  /// `order.confirmed`, on the customer's devices.
  public static let orderConfirmed = AlertText(title: "Order confirmed", body: "We're packing your order.")

  /// `order.declined`, with the payment provider's message when it gave one.
  public static func paymentDeclined(_ message: String?) -> AlertText {
    AlertText(title: "Payment declined", body: message ?? "Your payment did not go through.")
  }

  /// A delivered order, on the lock screen or (without a Live Activity) on the devices.
  public static let delivered = AlertText(title: "Delivered", body: "Your order is at the door. Enjoy!")

  /// A Live Activity ended near its eight hours while the order runs on: what comes next
  /// arrives as alerts.
  public static let stillHandled = AlertText(
    title: "Still on it", body: "Your order is still being handled. We'll keep you posted here.")

  /// The alert for a stage change when the order's Live Activity is gone (ended near its eight
  /// hours): every stage the card would have shown.
  public static func progress(_ snapshot: TrackingSnapshot) -> AlertText {
    if let alert = stage(snapshot) { return alert }
    return switch snapshot.status {
    case .placed, .picking: AlertText(title: "Packing", body: "The hub is packing your order.")
    case .onTheWay:
      AlertText(
        title: "On its way", body: "\(snapshot.rider?.firstName ?? "Your rider") is bringing your order.")
    case .problem:
      AlertText(title: "A problem with your order", body: snapshot.problem ?? "The hub will be in touch.")
    case .arriving, .delivered, .cancelled: AlertText(title: "Your order", body: snapshot.status.rawValue)
    }
  }

  /// The alert a stage deserves on the lock screen, if any.
  public static func stage(_ snapshot: TrackingSnapshot) -> AlertText? {
    switch snapshot.status {
    case .arriving:
      AlertText(
        title: "Almost there",
        body: "\(snapshot.rider?.firstName ?? "Your rider") is arriving with your order.")
    case .delivered: delivered
    case .cancelled:
      AlertText(title: "Order cancelled", body: snapshot.problem ?? "The hub cancelled your order.")
    default: nil
    }
  }
}
