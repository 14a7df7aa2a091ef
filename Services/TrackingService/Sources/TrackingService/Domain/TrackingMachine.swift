import Foundation
import GrocerContracts

/// The rider an order is assigned to when it leaves the hub.
public struct AssignedRider: Codable, Hashable, Sendable {
  public var id: String
  public var firstName: String

  public init(id: String, firstName: String) {
    self.id = id
    self.firstName = firstName
  }
}

/// An order's stage and what the stage carries: the problem's message or the cancellation's
/// reason, the stage a problem interrupted, the assigned rider.
public struct TrackingState: Hashable, Sendable {
  public var status: TrackingStatus
  /// The message of a `problem`, the reason of a `cancelled`.
  public var note: String?
  /// For a `problem`: the stage it interrupted, to which (or past which) it may return.
  public var resumeStage: TrackingStatus?
  /// Assigned with `onTheWay`, cleared when the order goes back to `picking`.
  public var rider: AssignedRider?

  public init(
    status: TrackingStatus, note: String? = nil, resumeStage: TrackingStatus? = nil,
    rider: AssignedRider? = nil
  ) {
    self.status = status
    self.note = note
    self.resumeStage = resumeStage
    self.rider = rider
  }

  public static let placed = TrackingState(status: .placed)

  /// The stage the order is at, looking through a problem.
  public var stage: TrackingStatus { status == .problem ? (resumeStage ?? .placed) : status }
}

/// What staff or a rider ask for: `POST /v1/orders/{id}/status`.
public enum TrackingCommand: Hashable, Sendable {
  case picking
  case onTheWay(rider: AssignedRider)
  case arriving
  case delivered
  case cancelled(reason: String)
  case problem(message: String)

  public var target: TrackingStatus {
    switch self {
    case .picking: .picking
    case .onTheWay: .onTheWay
    case .arriving: .arriving
    case .delivered: .delivered
    case .cancelled: .cancelled
    case .problem: .problem
    }
  }
}

/// A move the machine refuses: `from` → `to`.
public struct IllegalTransition: Error, Hashable, Sendable {
  public var from: TrackingStatus
  public var to: TrackingStatus
  public var reason: String
}

/// The status machine, one pure value type with the whole transition table:
///
/// ```
/// placed ──► picking ──► onTheWay ──► arriving ──► delivered
///               ▲            │
///               └────────────┘  (a reassigned rider: back to picking, rider cleared)
/// any non-terminal ──► cancelled(reason)      terminal
/// any non-terminal ──► problem(message) ──► the interrupted stage (same rider), or the one after it
/// delivered, cancelled: terminal, nothing moves them
/// ```
///
/// Asking for the state the order is already in, with the same data, changes nothing (a retried
/// request is not an error); a `problem` with a new message is a change.
public enum TrackingMachine {
  /// The stages that follow `stage` on the happy path (and `picking` after `onTheWay`).
  public static func successors(of stage: TrackingStatus) -> Set<TrackingStatus> {
    switch stage {
    case .placed: [.picking]
    case .picking: [.onTheWay]
    case .onTheWay: [.arriving, .picking]
    case .arriving: [.delivered]
    case .delivered, .cancelled, .problem: []
    }
  }

  /// The state after `command`, nil if it changes nothing, or the refusal.
  public static func apply(_ command: TrackingCommand, to state: TrackingState) -> Result<
    TrackingState?, IllegalTransition
  > {
    let target = command.target
    func refuse(_ reason: String) -> Result<TrackingState?, IllegalTransition> {
      .failure(IllegalTransition(from: state.status, to: target, reason: reason))
    }
    if state.status.isTerminal {
      return refuse("\(state.status.rawValue) is final")
    }
    switch command {
    case .cancelled(let reason):
      return .success(TrackingState(status: .cancelled, note: reason, rider: state.rider))
    case .problem(let message):
      if state.status == .problem, state.note == message { return .success(nil) }
      return .success(
        TrackingState(status: .problem, note: message, resumeStage: state.stage, rider: state.rider))
    default:
      break
    }
    // A stage: from the current one, or from the stage a problem interrupted.
    let from = state.stage
    if state.status != .problem, from == target {
      if case .onTheWay(let rider) = command, rider != state.rider {
        return refuse("the order is on its way with another rider; move it back to picking to reassign")
      }
      return .success(nil)
    }
    let allowed = successors(of: from).union(state.status == .problem ? [from] : [])
    guard allowed.contains(target) else {
      return refuse("\(target.rawValue) does not follow \(from.rawValue)")
    }
    switch command {
    case .picking:
      return .success(TrackingState(status: .picking))
    case .onTheWay(let rider):
      // Back from a problem on the way: the same rider; another one goes through picking.
      if state.status == .problem, from == .onTheWay, let assigned = state.rider, assigned != rider {
        return refuse("the order is on its way with another rider; move it back to picking to reassign")
      }
      return .success(TrackingState(status: .onTheWay, rider: rider))
    case .arriving, .delivered:
      guard state.rider != nil else { return refuse("no rider is assigned") }
      return .success(TrackingState(status: target, rider: state.rider))
    case .cancelled, .problem:
      return refuse("unreachable")
    }
  }
}
