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
@testable import OrderService
@testable import StockService

/// StockService, CartService and OrderService in this process, on the real broker, wired to each
/// other by queue names of their own (so tests running side by side never answer each other's
/// questions), sharing one manual clock.
///
/// Each world makes its own hub (`hub`, open all day, minimum order 5.00, delivery 1.99) with
/// products `p1` 2.50 + 0.25 deposit (20), `p2` 4.00 (5), `p3` 1.00 (2), created through
/// StockService's staff API; CartService learns it from StockService like in production.
final class OrderWorld: Sendable {
  static let secret = "order-test-secret"

  let clock: ManualClock
  let unique: String
  let hub: HubID
  let stock: StockServiceApp
  let cart: CartServiceApp
  let order: OrderServiceApp
  let stockClient: TestClient
  let cartClient: TestClient
  let orderClient: TestClient
  let orderConfiguration: OrderServiceConfiguration
  let names: [String]
  /// OrderService's database and the simulated provider's (`TestEngine.selected`'s engine).
  let databases: OrderDatabases

  /// - Parameter clock: shared by the three services; a test that runs `order-service` as a
  ///   process (on the real clock) starts it at the real time.
  init(
    clock: ManualClock = ManualClock(), engine: TestEngine = .selected,
    configure: (inout OrderServiceConfiguration) -> Void = { _ in }, payments: (any PaymentProvider)? = nil
  ) throws {
    databases = try OrderDatabases(engine: engine)
    self.clock = clock
    let unique = UUID().uuidString.prefix(8).lowercased()
    self.unique = String(unique)
    hub = "o\(unique)"
    let root = NSTemporaryDirectory() + "grocer-order-world-\(unique)"
    let stockName = "stock-for-order-\(unique)"
    let cartName = "cart-for-order-\(unique)"
    let catalogueQueue = "\(stockName).catalogue"
    let reservationQueue = "\(stockName).reservations"
    let checkoutQueue = "\(cartName).checkout"
    names = [
      stockName, "\(stockName).parking", reservationQueue, catalogueQueue, cartName, "\(cartName).parking",
      checkoutQueue, "r-\(unique)",
    ]

    var stockConfiguration = StockServiceConfiguration(
      settings: Settings([
        "GROCER_DATA_DIR": root + "/stock", "GROCER_JWT_SECRET": Self.secret,
        "GROCER_REPLICA_ID": "r-\(unique)",
      ]))
    stockConfiguration.serviceName = stockName
    stockConfiguration.reservationQueue = reservationQueue
    stockConfiguration.catalogueQueue = catalogueQueue
    stockConfiguration.queueExpiry = 600
    stock = try buildStockService(
      configuration: stockConfiguration, logger: .discarding(), clock: clock,
      ids: SequentialIDs(prefix: "s-\(unique)"))

    var cartConfiguration = CartServiceConfiguration(
      settings: Settings(["GROCER_DATA_DIR": root + "/cart", "GROCER_JWT_SECRET": Self.secret]))
    cartConfiguration.serviceName = cartName
    cartConfiguration.checkoutQueue = checkoutQueue
    cartConfiguration.catalogueQueue = catalogueQueue
    cartConfiguration.catalogueTimeout = 5
    cartConfiguration.queueExpiry = 600
    cart = try buildCartService(
      configuration: cartConfiguration, logger: .discarding(), clock: clock,
      ids: SequentialIDs(prefix: "c-\(unique)"))

    var orderConfiguration = OrderServiceConfiguration(
      settings: Settings(
        ["GROCER_DATA_DIR": root + "/order", "GROCER_JWT_SECRET": Self.secret].merging(databases.environment)
        {
          $1
        }))
    orderConfiguration.serviceName = "order-test-\(unique)"
    orderConfiguration.replicaID = "order-test-\(unique)-1"
    orderConfiguration.cartCheckoutQueue = checkoutQueue
    orderConfiguration.reservationQueue = reservationQueue
    orderConfiguration.remoteTimeout = 5
    orderConfiguration.paymentTimeout = 0.5
    orderConfiguration.requestDeadline = 4
    orderConfiguration.simulatorHang = 1
    orderConfiguration.recoveryInterval = 0.05
    configure(&orderConfiguration)
    self.orderConfiguration = orderConfiguration
    order = try buildOrderService(
      configuration: orderConfiguration, logger: .discarding(), clock: clock,
      ids: SequentialIDs(prefix: "o-\(unique)"),
      payments: payments)

    stockClient = TestClient(stock.router)
    cartClient = TestClient(cart.router)
    orderClient = TestClient(order.router)
  }

  var simulator: SimulatedPaymentProvider { order.payments as! SimulatedPaymentProvider }

  /// Another replica of OrderService on this world's databases and queues (PostgreSQL only), its
  /// in-process parts started; stop it with `stopReplica`.
  func startReplica(_ number: Int) async throws -> (app: OrderServiceApp, client: TestClient) {
    var configuration = orderConfiguration
    configuration.serviceName = "order-test-\(unique)-\(number)"
    configuration.replicaID = "order-test-\(unique)-\(number)"
    let app = try buildOrderService(
      configuration: configuration, logger: .discarding(), clock: clock,
      ids: SequentialIDs(prefix: "o\(number)-\(unique)"))
    for service in app.services where !(service is HTTPServer) { try await service.start() }
    let client = TestClient(app.router)
    let ready = await eventually(timeout: .seconds(20)) { await client.get("/health/ready").status == 200 }
    try #require(ready, "replica \(number) did not become ready")
    return (app, client)
  }

  func stopReplica(_ app: OrderServiceApp) async {
    for service in app.services.reversed() where !(service is HTTPServer) { await service.shutdown() }
  }

  /// Starts the three services (no sockets), makes the hub and waits until the cart knows it.
  /// With `order: false`, OrderService's in-process parts stay idle (a test runs the
  /// executable instead).
  func start(order startOrder: Bool = true) async throws {
    try TestBroker.ensureRunning()
    for app in [stock.services, cart.services] + (startOrder ? [order.services] : []) {
      for service in app where !(service is HTTPServer) { try await service.start() }
    }
    for client in [stockClient, cartClient] + (startOrder ? [orderClient] : []) {
      let ready = await eventually(timeout: .seconds(20)) { await client.get("/health/ready").status == 200 }
      try #require(ready, "a service did not become ready")
    }
    try await makeHub()
  }

  func stop() async {
    for app in [order.services, cart.services, stock.services] {
      for service in app.reversed() where !(service is HTTPServer) { await service.shutdown() }
    }
    try? await AMQPAdmin.deleteQueues(configuration: TestBroker.configuration(), names)
  }

  /// Runs `body` with the world started, stopping it afterwards whatever happens.
  static func with(
    configure: (inout OrderServiceConfiguration) -> Void = { _ in }, payments: (any PaymentProvider)? = nil,
    _ body: (OrderWorld) async throws -> Void
  ) async throws {
    let world = try OrderWorld(configure: configure, payments: payments)
    try await world.start()
    try await withCleanup({ await world.stop() }) { try await body(world) }
  }

  // MARK: - Staff and customers

  func token(_ subject: String, role: Principal.Role = .customer, hubs: [String] = []) -> String {
    HS256Signer(secret: Self.secret).sign(
      claims: TokenClaims(
        subject: subject, role: role, hubs: hubs, issuedAt: clock.now(), expiresAt: clock.now() + 24 * 3600))
  }

  func customer(_ user: String = "u1") -> [String: String] {
    ["Authorization": "Bearer " + token(user), "Content-Type": "application/json"]
  }

  var staff: [String: String] {
    [
      "Authorization": "Bearer " + token("staff-1", role: .staff, hubs: ["*"]),
      "Content-Type": "application/json",
    ]
  }

  private func makeHub() async throws {
    let hours = String(
      decoding: try JSON.encode(OpeningHours.daily(opens: .midnight, closes: .endOfDay)), as: UTF8.self)
    let hubBody = """
      {"name":"Order test hub","currency":"EUR","hours":\(hours),
       "pricing":{"minimumOrder":{"minorUnits":500,"currency":"EUR"},"deliveryFee":{"minorUnits":199,"currency":"EUR"}}}
      """
    let created = await stockClient.send("PUT", "/v1/hubs/\(hub)", headers: staff, body: hubBody)
    try #require(created.status == 201, "\(created.bodyString)")
    for (sku, name, price, deposit, count) in [
      ("p1", "Oat milk", 250, 25, 20), ("p2", "Coffee", 400, 0, 5), ("p3", "Limes", 100, 0, 2),
    ] {
      let depositJSON = deposit > 0 ? #","deposit":{"minorUnits":\#(deposit),"currency":"EUR"}"# : ""
      let product = await stockClient.send(
        "PUT", "/v1/hubs/\(hub)/products/\(sku)", headers: staff,
        body: #"{"name":"\#(name)","price":{"minorUnits":\#(price),"currency":"EUR"}\#(depositJSON)}"#)
      try #require([200, 201].contains(product.status), "\(product.bodyString)")
      try await setStock(sku, count)
    }
    // CartService knows the hub, its products and their counts once a probe customer can hold
    // as many of each as the hub has (a count that has not arrived yet would clamp the line).
    let counts = ["p1": 20, "p2": 5, "p3": 2]
    let known = await eventually(timeout: .seconds(20)) {
      for (sku, count) in counts {
        let put = await self.cartClient.send(
          "PUT", "/v1/hubs/\(self.hub)/cart/items/\(sku)", headers: self.customer("probe"),
          body: #"{"quantity":\#(count)}"#)
        guard put.status == 200, let cart = try? put.json(as: CartView.self),
          cart.lines.first(where: { $0.sku == sku })?.quantity == count
        else { return false }
      }
      return true
    }
    try #require(known, "CartService never learnt the hub")
  }

  func setStock(_ sku: SKU, _ count: Int) async throws {
    let set = await stockClient.send(
      "PUT", "/v1/hubs/\(hub)/stock/\(sku)", headers: staff, body: #"{"available":\#(count)}"#)
    try #require(set.status == 200, "\(set.bodyString)")
  }

  /// StockService's counts of `sku`: on hand, and held by open reservations.
  func stockCounts(_ sku: SKU) throws -> (onHand: Int, held: Int) {
    let hub = self.hub
    return try stock.store.database.read { db in
      let row = try #require(
        try db.queryOne("SELECT on_hand, held FROM products WHERE hub = ? AND sku = ?", hub, sku))
      return (try row.int(0), try row.int(1))
    }
  }

  /// Puts `quantity` of `sku` in `user`'s cart; returns the cart.
  @discardableResult
  func put(_ sku: SKU, _ quantity: Int, user: String = "u1") async throws -> CartView {
    let response = await cartClient.send(
      "PUT", "/v1/hubs/\(hub)/cart/items/\(sku)", headers: customer(user), body: #"{"quantity":\#(quantity)}"#
    )
    try #require(response.status == 200, "\(response.bodyString)")
    return try response.json(as: CartView.self)
  }

  func cart(user: String = "u1") async throws -> CartView {
    let response = await cartClient.get("/v1/hubs/\(hub)/cart", headers: customer(user))
    try #require(response.status == 200, "\(response.bodyString)")
    return try response.json(as: CartView.self)
  }

  /// The body of `POST /v1/orders` for this world's hub.
  func orderBody(version: Int64, token: String = "tok_visa", method: String = "card") -> String {
    #"{"hub":"\#(hub)","cartVersion":\#(version),"payment":{"method":"\#(method)","token":"\#(token)"},"deliverTo":{"lat":52.53,"lng":13.41}}"#
  }

  func placeOrder(
    key: String, version: Int64, token: String = "tok_visa", user: String = "u1",
    through client: TestClient? = nil
  ) async -> HTTPResponse {
    await (client ?? orderClient).send(
      "POST", "/v1/orders", headers: customer(user).merging(["Idempotency-Key": key]) { $1 },
      body: orderBody(version: version, token: token))
  }

  /// The simulator's charges for this world's orders.
  func charges() throws -> [SimulatedPaymentProvider.Entry] { try simulator.ledger() }

  /// The order events OrderService has published or still holds (outbox rows go once confirmed,
  /// so this reads what the broker got through a queue of the test's own).
  func storedOrder(_ id: String) throws -> OrderRecord? { try order.store.order(id) }
}

struct Problem: Decodable {
  var status: Int
  var code: String
  var detail: String
}

struct PlacedOrder: Decodable {
  var orderId: String
  var status: String
  var total: Money?
  var message: String?
  var paymentId: String?
  var action: PaymentAction?
  var cart: CartView?
}

/// OrderService's two databases for one test, on `engine`, dropped with
/// the last reference (a SQLite run keeps them in the data folder).
final class OrderDatabases: Sendable {
  let order: TestLocation?
  let simulator: TestLocation?

  init(engine: TestEngine) throws {
    guard engine == .postgres else {
      (order, simulator) = (nil, nil)
      return
    }
    order = try TestEngine.postgres.freshLocation("order")
    simulator = try TestEngine.postgres.freshLocation("payments")
  }

  /// The settings that point OrderService at them (none for SQLite).
  var environment: [String: String] {
    var environment = order?.environment ?? [:]
    if let simulator, case .postgres(let url) = simulator.location {
      environment["GROCER_PAYMENT_SIM_DATABASE_URL"] = url
    }
    return environment
  }

  deinit {
    order?.remove()
    simulator?.remove()
  }
}
