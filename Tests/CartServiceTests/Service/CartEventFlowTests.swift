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

@testable import CartService

extension CartFixture {
  /// Starts everything but the socket listener (tests drive the router in-process) and waits
  /// until the service is ready.
  func start() async throws {
    for service in app.services where !(service is HTTPServer) { try await service.start() }
    let ready = await eventually(timeout: .seconds(15)) { await client.get("/health/ready").status == 200 }
    try #require(ready, "the service did not become ready")
  }

  /// Stops what `start` started and deletes this fixture's queues.
  func stop() async {
    for service in app.services.reversed() where !(service is HTTPServer) { await service.shutdown() }
    let name = configuration.serviceName
    try? await AMQPAdmin.deleteQueues(
      configuration: TestBroker.configuration(), [name, "\(name).parking", configuration.checkoutQueue])
  }
}

/// Publishes envelopes on `grocer.events` the way StockService or OrderService would.
func publish(_ envelopes: [EventEnvelope]) async throws {
  try await publishMessages(try envelopes.map { try $0.message() })
}

func publishMessages(_ messages: [OutgoingMessage]) async throws {
  let publisher = AMQPPublisher(
    configuration: TestBroker.configuration("cart-tests-publisher"), logger: .discarding(),
    metrics: MetricsRegistry())
  try await publisher.start()
  try await withCleanup({ await publisher.shutdown() }) {
    // The broker nacks a message routed to a queue another suite is deleting at that moment;
    // publish again, as the outbox relay does (the same message ids: consumers' inboxes drop
    // a second copy).
    for attempt in 1... {
      do { return try await publisher.publish(messages) } catch AMQPError.nacked where attempt < 3 {}
    }
  }
}

func stockChanged(_ event: StockChanged, version: Int64) throws -> EventEnvelope {
  try EventEnvelope(
    id: UUID().uuidString, type: StockEventType.stockChanged, occurredAt: Date(), source: "stock-test",
    correlationId: "corr-stock", subject: StockChanged.subject(hub: event.hub, sku: event.sku),
    sequence: version,
    payload: event)
}

/// CartService against the real broker: `stock.changed`, `hub.changed` and `order.confirmed` in
/// through its queue, `cart.changed` out through the outbox, the checkout question and the
/// catalogue fill over request/reply.
@Suite(.serialized) struct CartEventFlowTests {
  init() throws { try TestBroker.ensureRunning() }

  @Test func aStockDropThroughRabbitMQAdjustsTheCartAndPublishesItsNewVersion() async throws {
    let fixture = try CartFixture()
    // Listen for cart.changed like another service would.
    let seen = Recorder<EventEnvelope>()
    let listener = AMQPConsumer(
      configuration: TestBroker.configuration("cart-tests-listener"),
      queue: QueueSpec(
        name: uniqueName("cart-listener"), bindingKeys: [CartEventType.cartChanged], kind: .transient),
      logger: .discarding(), metrics: MetricsRegistry()
    ) { delivery in
      if let envelope = try? JSON.decode(EventEnvelope.self, from: delivery.body) { seen.append(envelope) }
      return .ack
    }
    try await listener.start()
    try await fixture.start()
    try await withCleanup({
      await listener.shutdown(); await fixture.stop()
    }) {

      // A user of this test's own: other suites' carts publish cart.changed on the same exchange.
      let user = "u-\(UUID().uuidString.prefix(8))"
      try await fixture.put("p1", 5, user: user)
      try await publish([
        try stockChanged(
          StockChanged(
            hub: "h1", sku: "p1", name: "Oat milk", available: 2, price: CartFixture.eur(139),
            deposit: CartFixture.eur(25)), version: 2)
      ])
      let adjusted = await eventually { (try? await fixture.cart(user: user).version) == 2 }
      #expect(adjusted)
      let cart = try await fixture.cart(user: user, seen: 1)
      #expect(cart.lines.first?.quantity == 2)
      #expect(
        cart.adjustments == [
          CartAdjustment(.reduced(sku: "p1", to: 2), version: 2),
          CartAdjustment(
            .priceChanged(sku: "p1", from: CartFixture.eur(129), to: CartFixture.eur(139)), version: 2),
        ])
      let subject = CartChanged.subject(userId: user, hub: "h1")
      let published = await eventually { Set(seen.all.filter { $0.subject == subject }.map(\.id)).count == 2 }
      #expect(published)
      // At least once: a late confirm republishes with the same id, which consumers dedupe.
      var ids = Set<String>()
      let versions = seen.all.filter { $0.subject == subject && ids.insert($0.id).inserted }.map(\.sequence)
      #expect(versions == [1, 2])
      #expect(seen.all.last { $0.subject == subject }?.correlationId == "corr-stock")
    }
  }

  @Test func aNewHubAndAConfirmedOrderArriveThroughTheQueue() async throws {
    let fixture = try CartFixture()
    try await fixture.start()
    try await withCleanup({ await fixture.stop() }) {
      let hub = uniqueName("hub").replacingOccurrences(of: ":", with: "-")
      #expect(await fixture.client.get("/v1/hubs/\(hub)/cart", headers: fixture.customer()).status == 404)
      var created = CartFixture.hubs[0].value
      created.hub = hub
      try await publish([
        try EventEnvelope(
          id: UUID().uuidString, type: StockEventType.hubChanged, occurredAt: Date(), source: "stock-test",
          correlationId: nil, subject: HubChanged.subject(hub: hub), sequence: 1, payload: created),
        try stockChanged(
          StockChanged(hub: hub, sku: "n1", name: "Bread", available: 4, price: CartFixture.eur(300)),
          version: 1),
      ])
      let usable = try await eventually {
        let response = try await fixture.client.put(
          "/v1/hubs/\(hub)/cart/items/n1", json: ["quantity": 1], headers: fixture.customer())
        return response.status == 200
      }
      #expect(usable, "the new hub's cart did not accept the new product")

      try await publish([
        try EventEnvelope(
          id: UUID().uuidString, type: StockEventType.orderConfirmed, occurredAt: Date(),
          source: "order-test",
          correlationId: nil, subject: "o1", sequence: 1,
          payload: OrderOutcome(orderId: "o1", hub: hub, userId: "u1"))
      ])
      #expect(await eventually { (try? await fixture.cart(hub: hub).lines.isEmpty) == true })
      #expect(try await fixture.cart(hub: hub).version == 2)
    }
  }

  @Test func aPoisonEventIsDeadLetteredAndTheQueueMovesOn() async throws {
    let fixture = try CartFixture()
    try await fixture.start()
    try await withCleanup({ await fixture.stop() }) {
      try await fixture.put("p1", 5)
      let poison = EventEnvelope(
        id: UUID().uuidString, type: StockEventType.stockChanged, occurredAt: Date(), source: "stock-test",
        correlationId: nil, subject: "h1/p1", sequence: 9, data: .string("not a payload"))
      // Straight to this fixture's queue (default exchange), so no other consumer sees the poison.
      var direct = try poison.message()
      direct.exchange = ""
      direct.routingKey = fixture.configuration.serviceName
      try await publishMessages([direct])
      try await publish([
        try stockChanged(
          StockChanged(
            hub: "h1", sku: "p1", name: "Oat milk", available: 1, price: CartFixture.eur(129),
            deposit: CartFixture.eur(25)), version: 3)
      ])
      #expect(await eventually { (try? await fixture.cart().lines.first?.quantity) == 1 })
      let parked = await eventually {
        (try? await AMQPAdmin.messageCount(
          configuration: TestBroker.configuration(), queue: "\(fixture.configuration.serviceName).parking"))
          == 1
      }
      #expect(parked)
    }
  }

  @Test func orderServiceAsksTheCheckoutQuestionOverRequestReply() async throws {
    let fixture = try CartFixture()
    try await fixture.start()
    let client = AMQPRPCClient(
      configuration: TestBroker.configuration("cart-tests-rpc"), logger: .discarding())
    try await client.start()
    try await withCleanup({
      await client.shutdown(); await fixture.stop()
    }) {
      _ = await client.waitUntilConnected()
      try await fixture.put("p1", 2, user: "alice")

      func ask(_ request: CartCheckoutRequest) async throws -> CartCheckoutReply {
        let data = try await client.request(
          routingKey: fixture.configuration.checkoutQueue, body: try JSON.encode(request),
          timeout: .seconds(5))
        return try JSON.decode(CartCheckoutReply.self, from: data)
      }
      let current = try await ask(
        CartCheckoutRequest(kind: .price, userId: "alice", hub: "h1", cartVersion: 1))
      #expect(current.matches)
      #expect(current.cart?.lines.map(\.quantity) == [2])
      let stale = try await ask(CartCheckoutRequest(kind: .price, userId: "alice", hub: "h1", cartVersion: 0))
      #expect(stale.matches == false)
      #expect(stale.cart?.version == 1)
      let unknown = try await ask(
        CartCheckoutRequest(kind: .price, userId: "alice", hub: "h9", cartVersion: 1))
      #expect(unknown.error?.code == "unknownHub")
      let garbage = try await client.request(
        routingKey: fixture.configuration.checkoutQueue, body: Data("{".utf8), timeout: .seconds(5))
      #expect(try JSON.decode(CartCheckoutReply.self, from: garbage).error?.code == "badRequest")
      let shortfall = try await ask(
        CartCheckoutRequest(
          kind: .applyCounts, userId: "alice", hub: "h1", counts: [.init(sku: "p1", available: 1)]))
      #expect(shortfall.cart?.version == 2)
      #expect(shortfall.cart?.adjustments == [CartAdjustment(.reduced(sku: "p1", to: 1), version: 2)])
    }
  }
}
