import Foundation
import GrocerAMQP
import GrocerAuth
import GrocerContracts
import GrocerCore
import GrocerHTTP
import GrocerHTTPServer
import GrocerHTTPTesting
import GrocerRabbitMQ
import GrocerRuntime
import GrocerStorage
import GrocerTestSupport
import Testing

@testable import CartService
@testable import StockService

/// A real StockService in the same process, both on the real broker: what staff do at
/// StockService reaches carts only through its events (and the catalogue request), never through
/// its database.
@Suite(.serialized) struct CartWithStockServiceTests {
  init() throws { try TestBroker.ensureRunning() }

  struct Stock {
    let app: StockServiceApp
    let client: TestClient
    let name: String
    let catalogueQueue: String

    /// - Parameter catalogueQueue: the cart fixture's, so it asks this StockService.
    init(clock: ManualClock, catalogueQueue: String) throws {
      let unique = UUID().uuidString.prefix(8).lowercased()
      name = "stock-for-cart-\(unique)"
      self.catalogueQueue = catalogueQueue
      var configuration = StockServiceConfiguration(
        settings: Settings([
          "GROCER_DATA_DIR": NSTemporaryDirectory() + "grocer-stock-\(unique)",
          "GROCER_JWT_SECRET": CartFixture.secret, "GROCER_REPLICA_ID": "r-\(unique)",
        ]))
      configuration.serviceName = name
      configuration.reservationQueue = "\(name).reservations"
      configuration.catalogueQueue = catalogueQueue
      configuration.queueExpiry = 600
      app = try buildStockService(
        configuration: configuration, logger: .discarding(), clock: clock,
        ids: SequentialIDs(prefix: "s-\(unique)"))
      _ = try app.commands.loadDemo(DemoAssortment.generate(productsPerHub: 30))
      client = TestClient(app.router)
    }

    func start() async throws {
      for service in app.services where !(service is HTTPServer) { try await service.start() }
      let ready = await eventually(timeout: .seconds(15)) { await client.get("/health/ready").status == 200 }
      try #require(ready)
    }

    func stop() async {
      for service in app.services.reversed() where !(service is HTTPServer) { await service.shutdown() }
      try? await AMQPAdmin.deleteQueues(
        configuration: TestBroker.configuration(),
        [name, "\(name).parking", "\(name).reservations", catalogueQueue])
    }
  }

  @Test func staffChangesAtStockServiceReachTheCart() async throws {
    let clock = ManualClock()
    let cart = try CartFixture(clock: clock, seed: false)
    try await cart.start()  // its queue exists before StockService publishes the demo
    let stock = try Stock(clock: clock, catalogueQueue: cart.configuration.catalogueQueue)
    try await stock.start()
    try await withCleanup({
      await stock.stop(); await cart.stop()
    }) {
      let staff = cart.staff()

      // The demo hubs and products arrive as events.
      let sku = "p00001"
      let arrived = try await eventually(timeout: .seconds(20)) {
        try await cart.client.put(
          "/v1/hubs/h1/cart/items/\(sku)", json: ["quantity": 2], headers: cart.customer()
        )
        .status == 200
      }
      try #require(arrived, "the demo catalogue did not reach CartService")
      let before = try await cart.cart()

      // Staff count 1 at StockService: the cart is reduced at once, with a new version.
      let set = try await stock.client.put("/v1/hubs/h1/stock/\(sku)", json: ["available": 1], headers: staff)
      #expect(set.status == 200, "\(set.bodyString)")
      let reduced = await eventually { (try? await cart.cart().version) == before.version + 1 }
      #expect(reduced)
      let after = try await cart.cart(seen: before.version)
      #expect(after.lines.first?.quantity == 1)
      #expect(after.adjustments.map(\.change) == [.reduced(sku: sku, to: 1)])

      // A hub created a moment ago is usable as soon as its event arrived.
      let hub = "h\(UUID().uuidString.prefix(6).lowercased())"
      let created = await stock.client.send(
        "PUT", "/v1/hubs/\(hub)", headers: staff.merging(["Content-Type": "application/json"]) { $1 },
        body: """
          {"name":"Neu","currency":"EUR","hours":{"timeZone":"Europe/Berlin","weekly":[]},
           "pricing":{"minimumOrder":{"minorUnits":0,"currency":"EUR"},"deliveryFee":{"minorUnits":0,"currency":"EUR"}}}
          """)
      #expect(created.status == 201, "\(created.bodyString)")
      let known = await eventually {
        await cart.client.get("/v1/hubs/\(hub)/cart", headers: cart.customer()).status == 200
      }
      #expect(known, "the new hub did not reach CartService")
    }
  }

  @Test func aCartServiceStartedAfterTheEventsFillsItsCopyFromStockService() async throws {
    let clock = ManualClock()
    // Long enough for the catalogue requests that a real StockService answers.
    let cart = try CartFixture(clock: clock, seed: false, catalogueTimeout: 5)
    // StockService runs and publishes its demo before this CartService's queue exists.
    let stock = try Stock(clock: clock, catalogueQueue: cart.configuration.catalogueQueue)
    try await stock.start()
    try await withCleanup({ await stock.stop() }) {
      #expect(await eventually { (try? stock.app.store.database.read { try Outbox.backlog(in: $0) }) == 0 })
      try await cart.start()
      try await withCleanup({ await cart.stop() }) {
        let filled = await eventually(timeout: .seconds(20)) {
          (try? cart.app.store.catalogueSynced()) == true
        }
        #expect(filled, "the catalogue copy was not filled")
        #expect(try cart.app.store.hubIDs() == ["h1", "h2", "h3"])
        let reply = try await cart.put("p00030", 1, hub: "h3")
        #expect(reply.lines.map(\.sku) == ["p00030"])
        #expect(
          reply.lines.first?.unitPrice
            == (try stock.app.store.product(hub: "h3", sku: "p00030"))?.product.price)
      }
    }
  }
}
