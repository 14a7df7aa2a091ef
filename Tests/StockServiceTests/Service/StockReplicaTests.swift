import Foundation
import GrocerContracts
import GrocerCore
import GrocerTestSupport
import Synchronization
import Testing

@testable import StockService

/// Two replicas of StockService on one PostgreSQL database taking reservations at once, from
/// threads of their own: every reservation holds all of its lines or none, and together they
/// never hold more than is on hand.
@Suite struct StockReplicaTests {
  @Test func reservationsRacingOnTwoReplicasAreAllOrNothingAndNeverOversell() throws {
    let location = try TestEngine.postgres.freshLocation("stock")
    defer { location.remove() }
    let a = try StockFixture(sharing: location)
    let b = try StockFixture(dataDirectory: a.configuration.dataDirectory, sharing: location, clock: a.clock)
    let (first, second) = (a.sku(minimum: 1), a.demo.products.map(\.sku).last { $0 != a.sku(minimum: 1) }!)
    for sku in [first, second] {
      _ = try a.app.commands.setStock(hub: "h1", sku: sku, onHand: 10, actor: "staff", correlationID: nil)
    }
    // Orders of one of each, two of the first, or three of the second: any of them can be the
    // one that no longer fits while its other line would.
    let shapes: [[ReservationLine]] = [
      [ReservationLine(sku: first, quantity: 1), ReservationLine(sku: second, quantity: 1)],
      [ReservationLine(sku: first, quantity: 2)],
      [ReservationLine(sku: second, quantity: 3), ReservationLine(sku: first, quantity: 1)],
    ]
    let replies = Mutex<[String: (ReservationReply, [ReservationLine])]>([:])
    let errors = Mutex<[String]>([])
    let group = DispatchGroup()
    for thread in 0..<8 {
      group.enter()
      Thread {
        defer { group.leave() }
        for round in 0..<5 {
          let (orderId, lines) = ("o-\(thread)-\(round)", shapes[(thread + round) % shapes.count])
          let replica = (thread + round) % 2 == 0 ? a : b
          do {
            let (reply, _) = try replica.app.commands.reserve(
              ReservationRequest(orderId: orderId, hub: "h1", lines: lines), correlationID: nil)
            replies.withLock { $0[orderId] = (reply, lines) }
          } catch {
            errors.withLock { $0.append("\(orderId): \(error)") }
          }
        }
      }.start()
    }
    group.wait()
    #expect(errors.withLock { $0 } == [])
    let all = replies.withLock { $0 }
    #expect(all.count == 40)
    var held: [SKU: Int] = [:]
    for (reply, lines) in all.values where reply.status == .reserved {
      for line in lines { held[line.sku, default: 0] += line.quantity }
    }
    #expect(all.values.allSatisfy { [.reserved, .shortfall].contains($0.0.status) })
    for sku in [first, second] {
      let counts = try #require(
        try a.app.store.database.read { db in
          try db.queryOne("SELECT on_hand, held FROM products WHERE hub = 'h1' AND sku = ?", sku)
        })
      // Held is exactly what the reserved orders asked for: no shortfall left a line held.
      #expect(try counts.int(0) == 10)
      #expect(try counts.int(1) == held[sku, default: 0], "\(sku)")
      #expect(held[sku, default: 0] <= 10, "\(sku) oversold")
    }
    #expect(held[first, default: 0] >= 9, "the racing replicas left stock unsold: \(held)")
  }
}
