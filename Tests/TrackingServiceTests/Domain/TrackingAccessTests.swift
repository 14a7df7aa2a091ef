import Foundation
import GrocerContracts
import GrocerCore
import Testing

@testable import TrackingService

/// Who may read and change an order's tracking.
@Suite struct TrackingAccessTests {
  static let record: TrackingRecord = {
    var record = TrackingRecordChangesTests.started()
    record.state = TrackingState(status: .onTheWay, rider: TrackingRecordChangesTests.ana)
    return record
  }()

  static let customer = Principal(subject: "u1", role: .customer)
  static let stranger = Principal(subject: "u2", role: .customer)
  static let staff = Principal(subject: "s1", role: .staff, hubs: ["h1"])
  static let otherStaff = Principal(subject: "s2", role: .staff, hubs: ["h2"])
  static let rider = Principal(subject: "r7", role: .rider)
  static let otherRider = Principal(subject: "r8", role: .rider)

  @Test func theCustomerTheHubAndTheAssignedRiderRead() {
    #expect(TrackingAccess.mayRead(Self.customer, Self.record))
    #expect(TrackingAccess.mayRead(Self.staff, Self.record))
    #expect(TrackingAccess.mayRead(Self.rider, Self.record))
    #expect(!TrackingAccess.mayRead(Self.stranger, Self.record))
    #expect(!TrackingAccess.mayRead(Self.otherStaff, Self.record))
    #expect(!TrackingAccess.mayRead(Self.otherRider, Self.record))
  }

  @Test func staffMoveAnythingTheRiderOnlyTheLastSteps() throws {
    try TrackingAccess.mayMove(Self.staff, Self.record, .picking)
    try TrackingAccess.mayMove(Self.rider, Self.record, .arriving)
    try TrackingAccess.mayMove(Self.rider, Self.record, .delivered)
    try TrackingAccess.mayMove(Self.rider, Self.record, .problem(message: "flat"))
    #expect(throws: TrackingError.notFound("o1")) {
      try TrackingAccess.mayMove(Self.otherStaff, Self.record, .picking)
    }
    #expect(throws: TrackingError.notFound("o1")) {
      try TrackingAccess.mayMove(Self.otherRider, Self.record, .arriving)
    }
    #expect(
      throws: TrackingError(
        .forbidden, "notAllowedForRider", "a rider may only report arriving, delivered or a problem")
    ) {
      try TrackingAccess.mayMove(Self.rider, Self.record, .picking)
    }
    #expect(throws: TrackingError(.forbidden, "forbidden", "customers cannot change an order's status")) {
      try TrackingAccess.mayMove(Self.customer, Self.record, .picking)
    }
  }

  @Test func onlyTheAssignedRiderReportsAndOnlyTheCustomerRegistersAToken() throws {
    try TrackingAccess.mayReportFix(Self.rider, Self.record)
    #expect(throws: TrackingError.notFound("o1")) {
      try TrackingAccess.mayReportFix(Self.otherRider, Self.record)
    }
    try TrackingAccess.mayRegisterToken(Self.customer, Self.record)
    #expect(throws: TrackingError.notFound("o1")) {
      try TrackingAccess.mayRegisterToken(Self.stranger, Self.record)
    }
  }
}
