import Foundation
import GrocerContracts
import GrocerCore
import GrocerRuntime
import Testing

@testable import OrderService

/// The built-in provider keeps its promises: one charge per key, whatever is asked twice.
@Suite struct SimulatedPaymentProviderTests {
  let clock = ManualClock()
  let provider: SimulatedPaymentProvider

  init() throws {
    provider = try SimulatedPaymentProvider(
      path: NSTemporaryDirectory() + "grocer-sim-\(UUID().uuidString)/ledger.sqlite", clock: clock,
      ids: SequentialIDs(prefix: "p"), hang: 30, logger: .discarding())
  }

  func request(_ key: String, token: String, units: Int = 1000) -> ChargeRequest {
    ChargeRequest(
      idempotencyKey: key, amount: Money(minorUnits: units, currency: "EUR"), method: .card, token: token,
      reference: "ord-\(key)")
  }

  @Test func aChargeAskedTwiceIsOneCharge() async throws {
    let first = try await provider.charge(request("k1", token: "tok_visa"))
    let second = try await provider.charge(request("k1", token: "tok_visa"))
    guard case .approved(let id) = first else { throw Failure("not approved: \(first)") }
    #expect(second == first)
    #expect(try await provider.lookup(idempotencyKey: "k1") == .approved(paymentId: id))
    #expect(try await provider.lookup(idempotencyKey: "never") == nil)
    #expect(try provider.ledger().count == 1)
  }

  @Test func tokensDecide() async throws {
    guard case .declined(_, let message) = try await provider.charge(request("d", token: "sim-decline"))
    else {
      throw Failure("sim-decline did not decline")
    }
    #expect(!message.isEmpty)
    guard case .requiresAction(let id, let action) = try await provider.charge(request("s", token: "sim-3ds"))
    else {
      throw Failure("sim-3ds did not require action")
    }
    #expect(action.type == "threeDSecure")
    #expect(action.url.hasSuffix(id))
  }

  @Test func theFirstThreeDSecureVerdictWins() async throws {
    guard case .requiresAction(let id, _) = try await provider.charge(request("s", token: "sim-3ds")) else {
      throw Failure("no action")
    }
    #expect(
      try await provider.settle(PaymentEvent(paymentId: id, kind: .succeeded)) == .approved(paymentId: id))
    #expect(try await provider.settle(PaymentEvent(paymentId: id, kind: .failed)) == .approved(paymentId: id))
    #expect(try await provider.cancel(idempotencyKey: "s") == .approved(paymentId: id))
    #expect(try await provider.settle(PaymentEvent(paymentId: "unknown", kind: .failed)) == nil)
  }

  @Test func aCancelledCheckIsDeclined() async throws {
    guard case .requiresAction(let id, _) = try await provider.charge(request("s", token: "sim-3ds")) else {
      throw Failure("no action")
    }
    #expect(try await provider.cancel(idempotencyKey: "s") == .declined(paymentId: id, message: "cancelled"))
    #expect(
      try await provider.settle(PaymentEvent(paymentId: id, kind: .succeeded))
        == .declined(paymentId: id, message: "cancelled"))
    #expect(try await provider.cancel(idempotencyKey: "none") == nil)
  }

  @Test func aSlowChargeHangsUntilTheCallerGivesUpAndSettlesWithTime() async throws {
    let provider = self.provider
    let req = request("slow", token: "sim-timeout")
    await #expect(throws: PaymentProviderError.timeout) {
      _ = try await provider.within(.milliseconds(100), on: Deadlines()) { try await provider.charge(req) }
    }
    guard case .processing(let id) = try await provider.lookup(idempotencyKey: "slow") else {
      throw Failure("not processing")
    }
    clock.advance(by: 31)
    #expect(try await provider.lookup(idempotencyKey: "slow") == .approved(paymentId: id))
    #expect(try provider.ledger().map(\.state) == ["approved"])
  }
}

struct Failure: Error, CustomStringConvertible {
  var description: String
  init(_ description: String) { self.description = description }
}
