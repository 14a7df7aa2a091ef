import Foundation
import GrocerAMQP
import GrocerAuth
import GrocerCore
import GrocerStorage
import GrocerTestSupport
import Testing

@testable import OrderService

#if canImport(FoundationNetworking)
  import FoundationNetworking
#endif

/// The `order-service` executable, killed mid-checkout (`GROCER_FAULT_CRASH_AT` makes it SIGKILL
/// itself at that point of the saga) and started again on the same data: the order is carried on
/// to exactly one confirmed order and one charge. Started again as another replica, it waits
/// for the dead one's claim on the order to run out, then carries it on the same way.
@Suite(.serialized) struct OrderProcessTests {
  init() throws { try TestBroker.ensureRunning() }

  @Test(arguments: [(SagaFault.afterCharge, "same"), (.afterReservation, "same"), (.afterCharge, "other")])
  func aProcessKilledMidCheckoutConfirmsOnceAfterRestart(fault: SagaFault, replica: String) async throws {
    // StockService's reservations expire by its clock; the process reads the real one.
    let world = try OrderWorld(clock: ManualClock(Date()))
    try await world.start(order: false)
    let name = "order-process-\(world.unique)"
    let dataDirectory = NSTemporaryDirectory() + name
    let port = try LocalPort.free()
    var environment = [
      "GROCER_DATA_DIR": dataDirectory, "GROCER_HTTP_PORT": String(port), "GROCER_SERVICE_NAME": name,
      "GROCER_CART_CHECKOUT_QUEUE": world.orderConfiguration.cartCheckoutQueue,
      "GROCER_RESERVATION_QUEUE": world.orderConfiguration.reservationQueue,
      "GROCER_JWT_SECRET": OrderWorld.secret, "GROCER_LOG_LEVEL": "warning",
      "GROCER_RECOVERY_INTERVAL": "0.2", "GROCER_REPLICA_ID": "first",
      // A drive's claim holds 2 × 2 s + 5 s.
      "GROCER_PAYMENT_TIMEOUT": "1", "GROCER_REMOTE_TIMEOUT": "2",
    ].merging(world.databases.environment) { $1 }
    try await withCleanup({ await world.stop() }) {
      let cart = try await world.put("p1", 3)
      let base = URL(string: "http://127.0.0.1:\(port)")!
      let now = Date()
      let token = HS256Signer(secret: OrderWorld.secret).sign(
        claims: TokenClaims(subject: "u1", role: .customer, hubs: [], issuedAt: now, expiresAt: now + 600))
      @Sendable func post() async -> (Int, String)? {
        var request = URLRequest(url: base.appendingPathComponent("v1/orders"))
        request.httpMethod = "POST"
        request.setValue("Bearer \(token)", forHTTPHeaderField: "Authorization")
        request.setValue("application/json", forHTTPHeaderField: "Content-Type")
        request.setValue("k-crash", forHTTPHeaderField: "Idempotency-Key")
        request.httpBody = Data(world.orderBody(version: cart.version).utf8)
        request.timeoutInterval = 10
        guard let (body, response) = try? await URLSession.shared.data(for: request) else { return nil }
        return ((response as? HTTPURLResponse)?.statusCode ?? 0, String(decoding: body, as: UTF8.self))
      }
      @Sendable func byKey() async -> String? {
        var request = URLRequest(url: base.appendingPathComponent("v1/orders"))
        request.url = URL(string: base.absoluteString + "/v1/orders?idempotencyKey=k-crash")
        request.setValue("Bearer \(token)", forHTTPHeaderField: "Authorization")
        guard let (body, _) = try? await URLSession.shared.data(for: request) else { return nil }
        return String(decoding: body, as: UTF8.self)
      }

      // 1. The process dies at the fault: the client gets no answer.
      environment["GROCER_FAULT_CRASH_AT"] = fault.rawValue
      let first = try ServiceExecutable("order-service", environment: environment).start()
      #expect(await first.answers(base.appendingPathComponent("health/ready")), "never ready on \(port)")
      let lost = await post()
      #expect(lost == nil, "the process answered \(String(describing: lost)) instead of dying")
      let died = await first.terminate()
      #expect(died.exited)
      #expect(died.status != 0, "the fault should have killed it")

      let ledger = try SimulatedPaymentProvider(
        location: world.databases.simulator?.location
          ?? .sqlite(path: dataDirectory + "/payment-simulator.sqlite"),
        clock: SystemClock(), ids: RandomIDs(), hang: 0, logger: .discarding())
      #expect(try ledger.ledger().count == (fault == .afterCharge ? 1 : 0))

      // 2. Started again: recovery carries the order on, and the key answers it.
      environment["GROCER_FAULT_CRASH_AT"] = nil
      environment["GROCER_REPLICA_ID"] = replica == "same" ? "first" : "second"
      let second = try ServiceExecutable("order-service", environment: environment).start()
      #expect(await second.answers(base.appendingPathComponent("health/ready")))
      let confirmed = await eventually(timeout: .seconds(30)) {
        await byKey()?.contains("\"confirmed\"") == true
      }
      let answer = await byKey() ?? "no answer"
      #expect(confirmed, "by key: \(answer)")
      let resend = await post()
      #expect(resend?.0 == 201, "\(String(describing: resend))")

      // Exactly one charge, approved; StockService committed the reservation once.
      let charges = try ledger.ledger()
      #expect(charges.count == 1)
      #expect(charges.first?.state == "approved")
      let committed = await eventually(timeout: .seconds(15)) {
        (try? world.stockCounts("p1")).map { $0 == (17, 0) } ?? false
      }
      #expect(committed, "\(String(describing: try? world.stockCounts("p1")))")
      let ending = await second.terminate()
      #expect(ending.status == 0)
    }
  }
}
