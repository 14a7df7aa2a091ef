import Foundation
import GrocerContracts
import GrocerCore

/// Who may see and change an order's tracking. Someone who may not see an order is told it does
/// not exist (404), exactly as for an order that does not.
public enum TrackingAccess {
  /// The customer who ordered, staff of the order's hub, and its assigned rider.
  public static func mayRead(_ principal: Principal, _ record: TrackingRecord) -> Bool {
    mayRead(principal, userId: record.userId, hub: record.hub, riderId: record.state.rider?.id)
  }

  /// `mayRead` from what the reply cache keeps of an order.
  public static func mayRead(_ principal: Principal, userId: String, hub: HubID, riderId: String?) -> Bool {
    switch principal.role {
    case .customer: principal.subject == userId
    case .staff: principal.isStaff(of: hub)
    case .rider: riderId == principal.subject
    }
  }

  /// Staff of the hub move anything; the assigned rider may say arriving, delivered or problem.
  /// A rider not assigned to the order does not see it at all (404).
  public static func mayMove(_ principal: Principal, _ record: TrackingRecord, _ command: TrackingCommand)
    throws(TrackingError)
  {
    switch principal.role {
    case .staff:
      // Another hub's order is as unknown as one that does not exist.
      guard principal.isStaff(of: record.hub) else { throw TrackingError.notFound(record.orderId) }
    case .rider:
      guard record.state.rider?.id == principal.subject else { throw TrackingError.notFound(record.orderId) }
      switch command {
      case .arriving, .delivered, .problem: return
      default:
        throw TrackingError(
          .forbidden, "notAllowedForRider", "a rider may only report arriving, delivered or a problem")
      }
    case .customer:
      throw TrackingError(.forbidden, "forbidden", "customers cannot change an order's status")
    }
  }

  /// Only the assigned rider reports positions; to anyone else the order does not exist.
  public static func mayReportFix(_ principal: Principal, _ record: TrackingRecord) throws(TrackingError) {
    guard record.state.rider?.id == principal.subject else { throw TrackingError.notFound(record.orderId) }
  }

  /// Only the customer who ordered registers its Live Activity token.
  public static func mayRegisterToken(_ principal: Principal, _ record: TrackingRecord) throws(TrackingError)
  {
    guard record.userId == principal.subject else { throw TrackingError.notFound(record.orderId) }
  }
}
