import Foundation
import GrocerAMQP
import GrocerContracts
import GrocerCore
import GrocerHTTP
import GrocerHTTPServer
import GrocerRabbitMQ
import GrocerRuntime
import GrocerStorage
import GrocerTestSupport
import Testing

@testable import StockService

extension StockFixture {
  /// Starts everything but the socket listener (tests drive the router in-process) and waits
  /// until every broker connection is up.
  func start() async throws {
    for service in app.services where !(service is HTTPServer) { try await service.start() }
  }

  func waitUntilReady() async throws {
    let ready = await eventually(timeout: .seconds(15)) { await client.get("/health/ready").status == 200 }
    try #require(ready, "the service did not become ready")
  }

  /// Stops what `start` started and deletes this fixture's queues, so test runs do not pile
  /// up durable queues on the shared broker.
  func stop() async {
    for service in app.services.reversed() where !(service is HTTPServer) { await service.shutdown() }
    let name = configuration.serviceName
    try? await AMQPAdmin.deleteQueues(
      configuration: TestBroker.configuration(),
      [
        name, "\(name).parking", configuration.reservationQueue, configuration.catalogueQueue,
      ])
  }

  func outboxBacklog() throws -> Int {
    try app.store.database.read { try Outbox.backlog(in: $0) }
  }
}

/// Publishes an event on `grocer.events` the way another service would.
func publish(_ type: String, _ payload: [String: String], id: String = UUID().uuidString) async throws {
  let publisher = AMQPPublisher(
    configuration: TestBroker.configuration("stock-tests-publisher"), logger: .discarding(),
    metrics: MetricsRegistry())
  try await publisher.start()
  defer { Task { await publisher.shutdown() } }
  let envelope = try EventEnvelope(
    id: id, type: type, occurredAt: Date(), source: "order-service-test", correlationId: "corr-\(id)",
    subject: payload["orderId"] ?? "x", sequence: 1, payload: payload)
  try await publisher.publish([try envelope.message()])
}

/// StockService against the real broker: events out through the outbox, events in through its
/// queues, reservations over request/reply.
@Suite(.serialized) struct StockEventFlowTests {
  init() throws { try TestBroker.ensureRunning() }

  /// Two replicas on one database and one durable queue, both connected, stopped afterwards.
  func withTwoReplicas(_ body: (_ writer: StockFixture, _ reader: StockFixture) async throws -> Void)
    async throws
  {
    let writer = try StockFixture()
    let reader = try StockFixture(
      dataDirectory: writer.configuration.dataDirectory, sharing: writer.location,
      serviceName: writer.configuration.serviceName, clock: writer.clock)
    try await writer.start()
    try await reader.start()
    try await withCleanup({
      await writer.stop(); await reader.stop()
    }) {
      try await writer.waitUntilReady()
      try await reader.waitUntilReady()
      try await body(writer, reader)
    }
  }

  @Test func aChangeOnOneReplicaReachesTheOtherReplicasCache() async throws {
    try await withTwoReplicas { writer, reader in

      let sku = writer.sku()
      let before = try await reader.stock("h1", [sku])[sku]
      #expect(before == writer.demo.counts["h1"]![sku])
      let response = try await writer.client.put(
        "/v1/hubs/h1/stock/\(sku)", json: ["available": 1], headers: writer.staff())
      #expect(response.status == 200)
      // The reader's entry is fresh for 30 s by its clock; only the event can move it.
      let moved = await eventually { (try? await reader.stock("h1", [sku])[sku]) == 1 }
      #expect(moved, "the reader still serves the old count")
      #expect(await eventually { (try? writer.outboxBacklog()) == 0 })
    }
  }

  @Test func catalogueChangesOnOneReplicaReachTheOtherReplicasScreensAtOnce() async throws {
    try await withTwoReplicas { writer, reader in
      // The reader keeps h1's screens in memory (for minutes by its clock)...
      let home = await reader.client.get("/v1/hubs/h1/home")
      #expect(home.status == 200 && home.bodyString.contains(#""id":"offers""#))
      let layout = HomeLayoutBody(sections: [HomeSection(id: "only", type: .categories)])
      let arrangedByStaff = try await writer.client.put(
        "/v1/hubs/h1/home", json: layout, headers: writer.staff())
      #expect(arrangedByStaff.status == 200)
      // ...until catalogue.changed drops them: the new layout shows at once.
      let arranged = await eventually {
        let now = await reader.client.get("/v1/hubs/h1/home")
        return now.bodyString.contains(#""id":"only""#) && !now.bodyString.contains(#""id":"offers""#)
      }
      #expect(arranged, "the reader still serves the old home")

      // A product renamed on the writer is renamed on the reader's category page.
      let product = writer.demo.products.first { $0.category != nil }!
      let page = "/v1/hubs/h1/categories/\(product.category!)/products?limit=50"
      #expect(await reader.client.get(page).bodyString.contains(product.name))
      let renamed = ProductUpsert(
        name: "Umbenannt \(product.sku)", price: product.price, deposit: product.deposit,
        unitPrice: product.unitPrice,
        brand: product.brand, category: product.category, image: product.image)
      let put = try await writer.client.put(
        "/v1/hubs/h1/products/\(product.sku)", json: renamed, headers: writer.staff())
      #expect(put.status == 200)
      let seen = await eventually {
        await reader.client.get(page).bodyString.contains("Umbenannt \(product.sku)")
      }
      #expect(seen, "the reader's page still shows the old name")

      // A new delivery area set on the writer resolves addresses on the reader.
      let lisbon = "/v1/delivery-area?lat=38.75&lng=-9.15"
      #expect(await reader.client.get(lisbon).bodyString.contains("outOfArea"))
      let square =
        #"{"area":{"type":"Polygon","coordinates":[[[-9.2,38.7],[-9.1,38.7],[-9.1,38.8],[-9.2,38.8],[-9.2,38.7]]]}}"#
      let set = await writer.client.send(
        "PUT", "/v1/hubs/h2/delivery-area",
        headers: writer.staff(["h2"]).merging(["Content-Type": "application/json"]) { $1 }, body: square)
      #expect(set.status == 200, "\(set.bodyString)")
      let served = await eventually { await reader.client.get(lisbon).bodyString.contains(#""hub":"h2""#) }
      #expect(served, "the reader still resolves with the old areas")
    }
  }

  @Test func aReservationHoldsStockUntilTheOrderIsConfirmed() async throws {
    let fixture = try StockFixture()
    try await fixture.start()
    try await withCleanup({ await fixture.stop() }) {
      try await fixture.waitUntilReady()
      let rpc = AMQPRPCClient(
        configuration: TestBroker.configuration("stock-tests-rpc"), logger: .discarding())
      try await rpc.start()
      defer { Task { await rpc.shutdown() } }

      let sku = fixture.sku(minimum: 5)
      let onHand = fixture.demo.counts["h1"]![sku]!
      let request = ReservationRequest(
        orderId: "order-1", hub: "h1", lines: [ReservationLine(sku: sku, quantity: 2)])
      func reserve(_ request: ReservationRequest) async throws -> ReservationReply {
        let data = try await rpc.request(
          routingKey: fixture.configuration.reservationQueue, body: try JSON.encode(request),
          timeout: .seconds(5))
        return try JSON.decode(ReservationReply.self, from: data)
      }
      let first = try await reserve(request)
      #expect(first.status == .reserved)
      // Asking twice is harmless: the same answer, held once.
      let again = try await reserve(request)
      #expect(again.status == .reserved)
      #expect(again.expiresAt == first.expiresAt)
      #expect(try await fixture.stock("h1", [sku])[sku] == onHand - 2)

      // More than is left: all-or-nothing, with what is available.
      let greedy = try await reserve(
        ReservationRequest(
          orderId: "order-2", hub: "h1",
          lines: [
            ReservationLine(sku: sku, quantity: onHand - 1),
            ReservationLine(sku: fixture.demo.products.first { $0.sku != sku }!.sku, quantity: 1),
          ]))
      #expect(greedy.status == .shortfall)
      #expect(greedy.shortfall?.first { $0.sku == sku }?.available == onHand - 2)
      #expect(try await fixture.stock("h1", [sku])[sku] == onHand - 2)

      try await publish("order.confirmed", ["orderId": "order-1", "hub": "h1"])
      let committed = await eventually {
        (try? fixture.app.store.database.read { db in
          try db.queryOne("SELECT on_hand, held FROM products WHERE hub = 'h1' AND sku = ?", sku).map {
            [try $0.int(0), try $0.int(1)]
          }
        }) == [onHand - 2, 0]
      }
      #expect(committed, "order.confirmed did not commit the reservation")
      #expect(try await fixture.stock("h1", [sku])[sku] == onHand - 2)
    }
  }

  @Test func aCancelledOrderOrAnExpiredHoldGivesTheStockBack() async throws {
    let fixture = try StockFixture()
    try await fixture.start()
    try await withCleanup({ await fixture.stop() }) {
      try await fixture.waitUntilReady()
      let sku = fixture.sku(minimum: 5)
      let onHand = fixture.demo.counts["h1"]![sku]!
      let (reply, _) = try fixture.app.commands.reserve(
        ReservationRequest(orderId: "o-cancel", hub: "h1", lines: [ReservationLine(sku: sku, quantity: 3)]),
        correlationID: nil)
      #expect(reply.status == .reserved)
      fixture.app.cache.removeAll()
      #expect(try await fixture.stock("h1", [sku])[sku] == onHand - 3)

      try await publish("order.cancelled", ["orderId": "o-cancel", "hub": "h1"])
      #expect(await eventually { (try? await fixture.stock("h1", [sku])[sku]) == onHand })

      _ = try fixture.app.commands.reserve(
        ReservationRequest(orderId: "o-expire", hub: "h1", lines: [ReservationLine(sku: sku, quantity: 1)]),
        correlationID: nil)
      #expect(await eventually { (try? await fixture.stock("h1", [sku])[sku]) == onHand - 1 })
      fixture.clock.advance(by: fixture.configuration.reservationTTL + 1)
      #expect(
        await eventually { (try? await fixture.stock("h1", [sku])[sku]) == onHand }, "the hold never expired")
    }
  }

  @Test func aPoisonMessageIsParkedAndDoesNotBlockTheOnesBehindIt() async throws {
    let fixture = try StockFixture()
    try await fixture.start()
    try await withCleanup({ await fixture.stop() }) {
      try await fixture.waitUntilReady()
      let sku = fixture.sku(minimum: 5)
      let onHand = fixture.demo.counts["h1"]![sku]!
      _ = try fixture.app.commands.reserve(
        ReservationRequest(orderId: "o-behind", hub: "h1", lines: [ReservationLine(sku: sku, quantity: 2)]),
        correlationID: nil)

      let publisher = AMQPPublisher(
        configuration: TestBroker.configuration("stock-tests-poison"), logger: .discarding(),
        metrics: MetricsRegistry())
      try await publisher.start()
      defer { Task { await publisher.shutdown() } }
      try await publisher.publish([
        OutgoingMessage(
          messageID: "poison-1", routingKey: "order.confirmed", type: "order.confirmed",
          body: Data("not json".utf8),
          timestamp: Date(), correlationID: nil)
      ])
      try await publish("order.declined", ["orderId": "o-behind", "hub": "h1"])

      #expect(await eventually { (try? await fixture.stock("h1", [sku])[sku]) == onHand })
      let parking = "\(fixture.configuration.serviceName).parking"
      let parked = await eventually {
        (try? await AMQPAdmin.messageCount(configuration: TestBroker.configuration(), queue: parking)) == 1
      }
      #expect(parked, "the poison message is not in \(parking)")
      #expect(
        fixture.app.metrics.render().contains(
          "events_dead_lettered_total{queue=\"\(fixture.configuration.serviceName)\"} 1"))
      try await AMQPAdmin.deleteQueues(
        configuration: TestBroker.configuration(), [fixture.configuration.serviceName, parking])
    }
  }

  @Test func withTheBrokerGoneReadsAndWritesGoOnAndEventsWait() async throws {
    // Nothing listens on port 1: the broker is "down" for this service only.
    let fixture = try StockFixture(amqpURL: "amqp://guest:guest@127.0.0.1:1/")
    try await fixture.start()
    try await withCleanup({ await fixture.stop() }) {
      let ready = await fixture.client.get("/health/ready")
      #expect(ready.status == 503)
      #expect(ready.headers["Retry-After"] != nil)
      let sku = fixture.sku()
      let backlog = try fixture.outboxBacklog()
      let response = try await fixture.client.put(
        "/v1/hubs/h1/stock/\(sku)", json: ["available": 4], headers: fixture.staff())
      #expect(response.status == 200)
      #expect(try await fixture.stock("h1", [sku])[sku] == 4)
      #expect(try fixture.outboxBacklog() == backlog + 1, "the event must wait in the outbox")
    }
  }
}
