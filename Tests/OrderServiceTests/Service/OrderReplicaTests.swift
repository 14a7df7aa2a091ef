import Foundation
import GrocerContracts
import GrocerCore
import GrocerHTTP
import GrocerHTTPTesting
import GrocerTestSupport
import Testing

@testable import OrderService

/// Two replicas of OrderService on one PostgreSQL database (and one simulated provider's
/// ledger, as they would share a provider), both with their recovery loops running: whichever
/// replica a request, its retry or the provider's callback reaches, each key is one order,
/// charged once.
@Suite struct OrderReplicaTests {
  /// A world on PostgreSQL with a second OrderService replica started beside its own.
  static func withTwoReplicas(
    _ body: (OrderWorld, (app: OrderServiceApp, client: TestClient)) async throws -> Void
  ) async throws {
    let world = try OrderWorld(engine: .postgres)
    try await world.start()
    let replica = try await world.startReplica(2)
    try await withCleanup({
      await world.stopReplica(replica.app)
      await world.stop()
    }) { try await body(world, replica) }
  }

  @Test func ordersPlacedAndRetriedOnEitherReplicaAreEachChargedOnce() async throws {
    try await Self.withTwoReplicas { world, replica in
      let clients = [world.orderClient, replica.client]
      let users = (0..<8).map { "u\($0)" }
      var versions: [String: Int64] = [:]
      for user in users { versions[user] = try await world.put("p1", 2, user: user).version }
      let snapshot = versions
      // Each order is sent to one replica and, at once, sent again with its key to the other
      // (a client whose first reply was lost, and whose retry the gateway sent elsewhere).
      let answers = await withTaskGroup(of: (String, Int, Int).self) { group in
        for (index, user) in users.enumerated() {
          for attempt in 0..<2 {
            group.addTask {
              let response = await world.placeOrder(
                key: "k-\(user)", version: snapshot[user]!, user: user,
                through: clients[(index + attempt) % 2])
              return (user, attempt, response.status)
            }
          }
        }
        var all: [(String, Int, Int)] = []
        for await answer in group { all.append(answer) }
        return all
      }
      for (user, attempt, status) in answers {
        #expect([201, 409].contains(status), "\(user) attempt \(attempt): \(status)")
      }
      // Every key ends confirmed, whichever replica is asked.
      for (index, user) in users.enumerated() {
        let confirmed = await eventually(timeout: .seconds(15)) {
          let response = await world.placeOrder(
            key: "k-\(user)", version: snapshot[user]!, user: user, through: clients[index % 2])
          return response.status == 201
        }
        #expect(confirmed, "\(user)'s order")
      }
      let charges = try world.charges()
      #expect(charges.count == users.count, "\(charges.map(\.reference))")
      #expect(Set(charges.map(\.reference)).count == users.count)
      #expect(charges.allSatisfy { $0.state == "approved" })
      #expect(try world.order.store.countsBySteps() == [.confirmed: users.count])
      let committed = await eventually(timeout: .seconds(15)) {
        (try? world.stockCounts("p1")).map { $0 == (20 - 2 * users.count, 0) } ?? false
      }
      #expect(committed, "\(String(describing: try? world.stockCounts("p1")))")
    }
  }

  @Test func tenConcurrentPostsOfOneKeyOnTwoReplicasPlaceOneOrderChargedOnce() async throws {
    try await Self.withTwoReplicas { world, replica in
      let cart = try await world.put("p1", 3)
      let clients = [world.orderClient, replica.client]
      let responses = await withTaskGroup(of: HTTPResponse.self) { group in
        for index in 0..<10 {
          group.addTask {
            await world.placeOrder(key: "k-burst", version: cart.version, through: clients[index % 2])
          }
        }
        var all: [HTTPResponse] = []
        for await response in group { all.append(response) }
        return all
      }
      let firsts = responses.filter { $0.status == 201 && $0.headers["Idempotent-Replayed"] == nil }
      #expect(firsts.count == 1, "\(responses.map { "\($0.status) \($0.bodyString)" })")
      #expect(responses.allSatisfy { [201, 409].contains($0.status) })
      #expect(Set(responses.filter { $0.status == 201 }.map(\.body)).count == 1)
      #expect(try world.charges().count == 1)
      #expect(try world.order.store.countsBySteps() == [.confirmed: 1])
    }
  }

  @Test func aCallbackThatReachesTheOtherReplicaSettlesTheOrder() async throws {
    try await Self.withTwoReplicas { world, replica in
      let cart = try await world.put("p2", 2)
      let response = await world.placeOrder(
        key: "k-3ds", version: cart.version, token: SimulatedPaymentProvider.threeDSToken)
      #expect(response.status == 202, "\(response.bodyString)")
      let body = try response.json(as: PlacedOrder.self)
      let settled = await world.paymentCallback(
        try #require(body.paymentId), #"{"type":"payment.succeeded"}"#, through: replica.client)
      #expect(settled.status == 200, "\(settled.bodyString)")
      #expect(settled.bodyString.contains("confirmed"), "\(settled.bodyString)")
      #expect(try world.storedOrder(body.orderId)?.status == .confirmed)
      #expect(try world.charges().map(\.state) == ["approved"])
      let committed = await eventually(timeout: .seconds(15)) {
        (try? world.stockCounts("p2")).map { $0 == (3, 0) } ?? false
      }
      #expect(committed)
    }
  }
}
