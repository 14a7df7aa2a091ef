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
