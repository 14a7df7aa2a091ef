import Foundation
import GrocerContracts
import Testing

@testable import TrackingService

/// The whole transition table, checked cell by cell against a table written out here apart from
/// the machine's own.
@Suite struct TrackingMachineTests {
  static let ana = AssignedRider(id: "r7", firstName: "Ana")
  static let bo = AssignedRider(id: "r8", firstName: "Bo")

  /// Every kind of state an order can be in.
  static let states: [String: TrackingState] = [
    "placed": .placed,
    "picking": TrackingState(status: .picking),
    "onTheWay": TrackingState(status: .onTheWay, rider: ana),
    "arriving": TrackingState(status: .arriving, rider: ana),
    "delivered": TrackingState(status: .delivered, rider: ana),
    "cancelled": TrackingState(status: .cancelled, note: "hub closed"),
    "problem@placed": TrackingState(status: .problem, note: "late", resumeStage: .placed),
    "problem@picking": TrackingState(status: .problem, note: "late", resumeStage: .picking),
    "problem@onTheWay": TrackingState(status: .problem, note: "late", resumeStage: .onTheWay, rider: ana),
    "problem@arriving": TrackingState(status: .problem, note: "late", resumeStage: .arriving, rider: ana),
  ]

  /// Every kind of command.
  static let commands: [String: TrackingCommand] = [
    "picking": .picking, "onTheWay(ana)": .onTheWay(rider: ana), "onTheWay(bo)": .onTheWay(rider: bo),
    "arriving": .arriving, "delivered": .delivered, "cancelled": .cancelled(reason: "out of stock"),
    "problem(late)": .problem(message: "late"), "problem(flat)": .problem(message: "flat tyre"),
  ]

  /// "→ X" moves to status X, "=" changes nothing, "409" is refused.
  static let table: [String: [String: String]] = [
    "placed": [
      "picking": "→ picking", "onTheWay(ana)": "409", "onTheWay(bo)": "409", "arriving": "409",
      "delivered": "409",
      "cancelled": "→ cancelled", "problem(late)": "→ problem", "problem(flat)": "→ problem",
    ],
    "picking": [
      "picking": "=", "onTheWay(ana)": "→ onTheWay", "onTheWay(bo)": "→ onTheWay", "arriving": "409",
      "delivered": "409", "cancelled": "→ cancelled", "problem(late)": "→ problem",
      "problem(flat)": "→ problem",
    ],
    "onTheWay": [
      "picking": "→ picking", "onTheWay(ana)": "=", "onTheWay(bo)": "409", "arriving": "→ arriving",
      "delivered": "409", "cancelled": "→ cancelled", "problem(late)": "→ problem",
      "problem(flat)": "→ problem",
    ],
    "arriving": [
      "picking": "409", "onTheWay(ana)": "409", "onTheWay(bo)": "409", "arriving": "=",
      "delivered": "→ delivered", "cancelled": "→ cancelled", "problem(late)": "→ problem",
      "problem(flat)": "→ problem",
    ],
    "delivered": [
      "picking": "409", "onTheWay(ana)": "409", "onTheWay(bo)": "409", "arriving": "409", "delivered": "409",
      "cancelled": "409", "problem(late)": "409", "problem(flat)": "409",
    ],
    "cancelled": [
      "picking": "409", "onTheWay(ana)": "409", "onTheWay(bo)": "409", "arriving": "409", "delivered": "409",
      "cancelled": "409", "problem(late)": "409", "problem(flat)": "409",
    ],
    "problem@placed": [
      "picking": "→ picking", "onTheWay(ana)": "409", "onTheWay(bo)": "409", "arriving": "409",
      "delivered": "409",
      "cancelled": "→ cancelled", "problem(late)": "=", "problem(flat)": "→ problem",
    ],
    "problem@picking": [
      "picking": "→ picking", "onTheWay(ana)": "→ onTheWay", "onTheWay(bo)": "→ onTheWay", "arriving": "409",
      "delivered": "409", "cancelled": "→ cancelled", "problem(late)": "=", "problem(flat)": "→ problem",
    ],
    "problem@onTheWay": [
      // Another rider only through picking (a reassignment), as without the problem.
      "picking": "→ picking", "onTheWay(ana)": "→ onTheWay", "onTheWay(bo)": "409",
      "arriving": "→ arriving", "delivered": "409", "cancelled": "→ cancelled", "problem(late)": "=",
      "problem(flat)": "→ problem",
    ],
    "problem@arriving": [
      "picking": "409", "onTheWay(ana)": "409", "onTheWay(bo)": "409", "arriving": "→ arriving",
      "delivered": "→ delivered", "cancelled": "→ cancelled", "problem(late)": "=",
      "problem(flat)": "→ problem",
    ],
  ]

  @Test func everyCellOfTheTable() {
    #expect(Self.table.count == Self.states.count)
    for (stateName, state) in Self.states {
      for (commandName, command) in Self.commands {
        let expected = Self.table[stateName]?[commandName]
        let actual: String =
          switch TrackingMachine.apply(command, to: state) {
          case .failure: "409"
          case .success(nil): "="
          case .success(let next?): "→ \(next.status.rawValue)"
          }
        #expect(actual == expected, "\(stateName) + \(commandName)")
      }
    }
  }

  @Test func whatAStateCarriesAcrossAMove() throws {
    // onTheWay assigns the rider; back to picking clears it (a reassignment).
    let onTheWay = try #require(
      try TrackingMachine.apply(.onTheWay(rider: Self.ana), to: TrackingState(status: .picking)).get())
    #expect(onTheWay.rider == Self.ana)
    let back = try #require(try TrackingMachine.apply(.picking, to: onTheWay).get())
    #expect(back.rider == nil)
    // A problem remembers the stage and the rider; resuming keeps the rider.
    let problem = try #require(try TrackingMachine.apply(.problem(message: "flat tyre"), to: onTheWay).get())
    #expect(problem.resumeStage == .onTheWay)
    #expect(problem.note == "flat tyre")
    #expect(problem.rider == Self.ana)
    let arriving = try #require(try TrackingMachine.apply(.arriving, to: problem).get())
    #expect(arriving.rider == Self.ana)
    #expect(arriving.note == nil)
    // A problem of a problem keeps the stage it first interrupted.
    let again = try #require(try TrackingMachine.apply(.problem(message: "still late"), to: problem).get())
    #expect(again.resumeStage == .onTheWay)
    // A refusal names both states.
    guard case .failure(let illegal) = TrackingMachine.apply(.picking, to: TrackingState(status: .delivered))
    else {
      Issue.record("delivered moved")
      return
    }
    #expect(illegal.from == .delivered)
    #expect(illegal.to == .picking)
  }

  @Test func aTerminalOrderStaysTerminalUnderEveryInput() {
    for terminal in [
      TrackingState(status: .delivered, rider: Self.ana), TrackingState(status: .cancelled, note: "x"),
    ] {
      for command in Self.commands.values {
        guard case .failure = TrackingMachine.apply(command, to: terminal) else {
          Issue.record("\(terminal.status) moved by \(command)")
          continue
        }
      }
    }
  }
}
