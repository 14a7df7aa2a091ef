import Foundation
import GrocerContracts
import GrocerCore

/// The recovery points of the checkout saga, in order. Each is written before the step after it
/// starts, so a restart knows exactly what may have happened outside (see `CheckoutSaga`).
public enum SagaStep: String, Sendable, Hashable, CaseIterable {
  /// The attempt is recorded; nothing asked yet.
  case received
  /// The cart was priced at the version the customer saw (`cart` holds it).
  case priced
  /// StockService holds the lines.
  case reserved
  /// The charge was (perhaps) sent to the provider: look it up by key before charging again.
  case charging
  /// The bank wants 3-D Secure; the verdict comes by callback (or lookup, or the deadline).
  case needsAction
  /// Paid; `order.confirmed` is in the outbox.
  case confirmed
  /// Not paid; `order.declined` is in the outbox.
  case declined
  /// Answered without becoming an order (the cart changed, was empty or blocked).
  case rejected
  /// Given up before any charge (a dependency did not answer); the key is free again.
  case abandoned

  /// Steps the saga still has to carry on from.
  public static let unfinished: [SagaStep] = [.received, .priced, .reserved, .charging, .needsAction]

  /// Steps a drive goes on from without waiting for anyone (`needsAction` waits for the bank).
  public static let driven: [SagaStep] = [.received, .priced, .reserved, .charging]

  /// Steps the saga has ended in.
  public static let finished: [SagaStep] = allCases.filter { !unfinished.contains($0) }

  /// Ends of attempts that never became orders: forgotten with their key.
  public static let withoutOrder: [SagaStep] = [.rejected, .abandoned]

  /// Steps an attempt may be given up from: nothing can have been charged yet.
  public static let abandonable: [SagaStep] = [.received, .priced, .reserved]

  public var isFinished: Bool { !Self.unfinished.contains(self) }
}

/// The status a customer sees: `pending` while the saga runs, then its answer.
public enum OrderStatus: String, Codable, Sendable, Hashable {
  case pending
  case needsAction
  case confirmed
  case declined
  case cartChanged
  case blocked
  case rejected
}

/// One order as OrderService keeps it.
public struct OrderRecord: Sendable, Hashable {
  public var orderId: String
  public var userId: String
  public var idempotencyKey: String
  public var hub: HubID
  public var cartVersion: Int64
  public var method: PaymentMethod
  /// Kept only until the charge has a verdict (needed to ask again after a crash).
  public var paymentToken: String?
  public var deliverTo: GeoPoint?
  public var correlationID: String?
  public var step: SagaStep
  public var status: OrderStatus
  public var cart: CartView?
  /// Until when StockService holds the lines (nil before the reservation).
  public var reservationExpiresAt: Date?
  public var paymentId: String?
  public var action: PaymentAction?
  public var message: String?
  public var chargingSince: Date?
  public var actionDeadline: Date?
  public var retries: Int
  public var createdAt: Date
  public var updatedAt: Date

  /// The provider's idempotency key for this order's charge: derived from the order, so every
  /// retry, recovery or lookup names the same charge.
  public var paymentKey: String { "grocer-order-" + orderId }

  public var total: Money? { cart?.totals.total }

  /// `{ orderId, status, hub, lines, totals, total, createdAt, paymentId?, action?, message? }`.
  public var view: OrderView {
    OrderView(
      orderId: orderId, status: status, hub: hub, lines: cart?.lines.map(OrderLine.init) ?? [],
      totals: cart?.totals, total: total, createdAt: createdAt, updatedAt: updatedAt, paymentId: paymentId,
      action: status == .needsAction ? action : nil, message: message)
  }
}

/// The reply of `GET /v1/orders/{id}`.
public struct OrderView: Codable, Sendable, Hashable {
  public var orderId: String
  public var status: OrderStatus
  public var hub: HubID
  public var lines: [OrderLine]
  public var totals: CartTotals?
  public var total: Money?
  public var createdAt: Date
  public var updatedAt: Date
  public var paymentId: String?
  public var action: PaymentAction?
  public var message: String?
}
