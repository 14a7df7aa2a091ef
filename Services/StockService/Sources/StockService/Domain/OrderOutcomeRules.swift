import GrocerContracts

/// Why a reservation was released (stored with it).
public enum ReleaseReason {
  /// Its `expiresAt` passed with no order outcome.
  public static let expired = "reservationExpired"
  /// A decline or cancellation arrived before any reservation request for the order.
  public static let outcomeFirst = "outcomeBeforeReservation"
}

/// What is stored of a reservation that the outcome rules read: its hub, state and why it was
/// released; and its lines in SKU order (none for a marker), which finishing it moves.
public struct ReservationStatus: Hashable, Sendable {
  public var hub: HubID
  public var state: Reservation.State
  public var releaseReason: String?
  public var lines: [ReservationLine]

  public init(hub: HubID, state: Reservation.State, releaseReason: String?, lines: [ReservationLine] = []) {
    self.hub = hub
    self.state = state
    self.releaseReason = releaseReason
    self.lines = lines
  }
}

/// What applying an order outcome did, for the log.
public enum OutcomeEffect: Equatable, Sendable {
  /// Committed or released as asked.
  case applied
  /// This event was applied before (a redelivery), or the reservation was already finished.
  case nothingToDo
  /// No reservation for the order: a decline or cancellation leaves a marker so a late
  /// reservation request for it holds nothing; a confirmation is only logged.
  case unknownOrder
  /// The order was confirmed after its hold had expired and was released: the goods are taken
  /// off on hand anyway (the order is paid), even if that leaves less than others expected.
  case confirmedAfterExpiry
}

/// The rule for `order.confirmed` / `order.declined` / `order.cancelled`: a confirmation commits
/// the reservation, a decline or cancellation releases it, each once.
public enum OrderOutcomeRules {
  /// What to do with an outcome.
  public enum Decision: Hashable, Sendable {
    /// Nothing to store (a finished reservation, or a confirmation of an unknown order).
    case nothing(OutcomeEffect)
    /// No reservation yet: store a released marker (`ReleaseReason.outcomeFirst`) so that a
    /// late request for the order holds nothing.
    case markReleased
    /// Finish the held reservation as `state`; each line's `stock.changed` carries `reason`.
    case finish(Reservation.State, reason: String)
    /// The hold expired before the confirmation: take the paid goods off on hand anyway.
    case takeAfterExpiry
  }

  public static func decide(_ kind: OrderOutcome.Kind, reservation: ReservationStatus?) -> Decision {
    guard let reservation else { return kind == .confirmed ? .nothing(.unknownOrder) : .markReleased }
    switch (reservation.state, kind) {
    case (.held, .confirmed): return .finish(.committed, reason: StockChangeReason.orderConfirmed)
    case (.held, .declined): return .finish(.released, reason: StockChangeReason.orderDeclined)
    case (.held, .cancelled): return .finish(.released, reason: StockChangeReason.orderCancelled)
    case (.released, .confirmed) where reservation.releaseReason == ReleaseReason.expired:
      return .takeAfterExpiry
    default: return .nothing(.nothingToDo)
    }
  }

  /// The effect a decision reports.
  public static func effect(of decision: Decision) -> OutcomeEffect {
    switch decision {
    case .nothing(let effect): effect
    case .markReleased: .unknownOrder
    case .finish: .applied
    case .takeAfterExpiry: .confirmedAfterExpiry
    }
  }
}

/// How finishing a reservation moves each of its lines' counts.
public enum ReservationFinish {
  /// Finishing a held reservation as `state`: a commit takes the goods (off on hand and off
  /// held); a release gives the hold back. Returns whether the count is published.
  public static func apply(_ state: Reservation.State, quantity: Int, to level: inout StockLevel)
    -> StockLevel.Taking
  {
    if state == .committed { return level.take(quantity, heldToo: true) }
    level.hold(-quantity)
    return StockLevel.Taking(publishes: true, oversold: false)
  }
}
