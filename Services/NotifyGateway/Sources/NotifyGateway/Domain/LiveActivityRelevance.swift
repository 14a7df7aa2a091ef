import Foundation
import GrocerContracts

/// How an order's Live Activity ranks beside the customer's other running ones on the lock
/// screen (ActivityKit's `relevance-score`, higher first): the nearer the order is to the door,
/// the higher. The stage counts first, in hundreds (`placed` 1 … `arriving` 4; a `problem` as
/// `picking`; a finished order 0, since its card only waits to be dismissed), then, within a
/// stage, the minutes left until the ETA's latest end at `generatedAt` (fewer ranks higher, 99 or
/// more count as 99).
public enum LiveActivityRelevance {
  public static func score(_ snapshot: TrackingSnapshot) -> Double {
    let stage: Int =
      switch snapshot.status {
      case .placed: 1
      case .picking, .problem: 2
      case .onTheWay: 3
      case .arriving: 4
      case .delivered, .cancelled: 0
      }
    guard stage > 0 else { return 0 }
    guard let eta = snapshot.eta else { return Double(stage * 100) }
    let minutes = max(0, min(99, Int(eta.latest.timeIntervalSince(snapshot.generatedAt) / 60)))
    return Double(stage * 100 + 99 - minutes)
  }
}
