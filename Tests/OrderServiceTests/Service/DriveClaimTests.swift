import Foundation
import GrocerContracts
import GrocerCore
import GrocerStorage
import GrocerTestSupport
import Testing

@testable import OrderService

/// Two replicas on one database never drive one order at once: the one that began or claimed it
/// holds it until its claim runs out, the other's steps are not written meanwhile, and after it
/// runs out the other takes the order over and the first one's steps are refused.
@Suite struct DriveClaimTests {
  let clock = ManualClock()

  func stores(on engine: TestEngine) throws -> (OrderStore, OrderStore, TestLocation) {
    let location = try engine.freshLocation("claims")
    let first = try location.open(migrations: OrderSchema.migrations)
    let second = try location.open(migrations: OrderSchema.migrations)
    func store(_ database: any SQLDatabase, _ driver: String) -> OrderStore {
      OrderStore(
        database: database, clock: clock, ids: SequentialIDs(prefix: driver), keyRetention: 3600,
        lease: DriveLease(driver: driver, duration: 15))
    }
    return (store(first, "a"), store(second, "b"), location)
  }

  func begin(_ store: OrderStore) throws -> String {
    let body = try PlaceOrderBody.decode(
      from: Data(ReviewHarness.body().utf8), mappingErrors: OrderError.init)
    guard
      case .started(let order) = try store.begin(
        user: "u1", key: "k1", body: body, method: .card, correlationID: nil)
    else { throw Failure("the attempt did not start") }
    return order.orderId
  }

  @Test(arguments: TestEngine.allCases)
  func theReplicaThatBeganAnOrderHoldsItUntilItsClaimRunsOut(engine: TestEngine) throws {
    let (a, b, location) = try stores(on: engine)
    defer { location.remove() }
    let orderId = try begin(a)
    // Past the recovery grace, within the claim: due for the replica holding it only.
    clock.advance(by: CheckoutPolicy.recoveryGrace + 1)
    #expect(try a.due(limit: 10) == [orderId])
    #expect(try b.due(limit: 10) == [])
    #expect(try b.claim(orderId) == false)
    #expect(throws: OrderStoreError.self) {
      try b.record(.priced(OrderHTTPTests.cart), of: orderId, reply: nil, event: nil)
    }
    #expect(try b.order(orderId)?.step == .received)
    // Each step renews the claim of the replica that records it.
    try a.record(.priced(OrderHTTPTests.cart), of: orderId, reply: nil, event: nil)
    clock.advance(by: 10)
    #expect(try b.claim(orderId) == false)

    // Its claim run out, the other replica takes the order over; the first one's steps are refused.
    clock.advance(by: 6)
    #expect(try b.due(limit: 10) == [orderId])
    #expect(try b.claim(orderId) == true)
    #expect(throws: OrderStoreError.self) {
      try a.record(
        .abandoned(compensate: true, reason: "late", detail: ""), of: orderId, reply: nil, event: nil)
    }
    try a.record(.postponed, of: orderId, reply: nil, event: nil)
    #expect(try b.order(orderId)?.retries == 0, "a postponement by a replica that lost the claim")
    try b.record(
      .abandoned(compensate: true, reason: "gone", detail: ""), of: orderId, reply: nil, event: nil)
    #expect(try a.order(orderId)?.step == .abandoned)
    #expect(try a.claim("ord_nothing") == nil)
  }

  @Test(arguments: TestEngine.allCases)
  func anAttemptIsForgottenOnlyByTheReplicaHoldingIt(engine: TestEngine) throws {
    let (a, b, location) = try stores(on: engine)
    defer { location.remove() }
    let orderId = try begin(a)
    #expect(throws: OrderStoreError.self) {
      try b.record(
        .abandoned(compensate: false, reason: "late", detail: ""), of: orderId, reply: nil, event: nil)
    }
    #expect(try a.order(orderId)?.step == .received)
    #expect(try a.lookup(user: "u1", key: "k1") != nil, "the key went with a refused abandon")
    try a.record(
      .abandoned(compensate: false, reason: "gone", detail: ""), of: orderId, reply: nil, event: nil)
    #expect(try a.order(orderId) == nil)
    #expect(try a.lookup(user: "u1", key: "k1") == nil)
  }

  @Test(arguments: TestEngine.allCases)
  func aDriveThatComesToRestLetsItsClaimGo(engine: TestEngine) throws {
    let (a, b, location) = try stores(on: engine)
    defer { location.remove() }
    let orderId = try begin(a)
    try a.record(.priced(OrderHTTPTests.cart), of: orderId, reply: nil, event: nil)
    try a.record(.postponed, of: orderId, reply: nil, event: nil)
    // Postponed, it is free at once: due for either replica after its back-off.
    #expect(try b.claim(orderId) == true)
    try b.record(
      .reserved(expiresAt: clock.now() + 600, chargingSince: clock.now()), of: orderId, reply: nil, event: nil
    )
    try b.record(
      .needsAction(
        paymentId: "pay_1", action: PaymentAction(url: "https://3ds.invalid/1"), deadline: clock.now() + 480,
        nextLookAt: clock.now() + 30), of: orderId, reply: nil, event: nil)
    // Waiting for the bank, no one holds it: the callback may land on any replica.
    #expect(try a.claim(orderId) == true)
    try a.record(.confirmed(paymentId: "pay_1"), of: orderId, reply: nil, event: nil)
    #expect(try b.order(orderId)?.step == .confirmed)
  }
}
