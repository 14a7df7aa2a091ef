import Foundation
import GrocerAuth
import GrocerContracts
import GrocerCore
import GrocerHTTP
import GrocerHTTPTesting
import GrocerRuntime
import GrocerStorage
import GrocerTestSupport
import Testing

@testable import CartService

/// One CartService wired for a test: a temporary data directory, a manual clock, sequential
/// ids, broker names of its own, and a small catalogue copy seeded as StockService's snapshot
/// would fill it:
/// - `h1` (EUR, open all day): minimum order 10.00, delivery 2.99, free from 30.00, small-basket
///   fee 1.00 below 15.00; products `p1` 1.29 + 0.25 deposit (10 left), `p2` 2.50 (3 left),
///   `p3` 0.99 (none left), `p4` 12.00 (50 left), `p5` 3.00 (99 left).
/// - `h2` (EUR, never open): `p1` 1.29 (10 left).
struct CartFixture {
  static let secret = "cart-test-secret"

  let app: CartServiceApp
  let client: TestClient
  let clock: ManualClock
  let configuration: CartServiceConfiguration

  /// Where the data is (`TestEngine.selected`'s engine); share it to run replicas on one database.
  let location: TestLocation
  /// Drops the database the fixture made once it is gone (nil when it was given).
  private let cleanup: DatabaseCleanup?

  init(
    dataDirectory: String? = nil, sharing shared: TestLocation? = nil, serviceName: String? = nil,
    clock: ManualClock = ManualClock(), seed: Bool = true, catalogueTimeout: TimeInterval = 0.3,
    publishesChanges: Bool = true
  )
    throws
  {
    let unique = UUID().uuidString.prefix(8).lowercased()
    let directory = dataDirectory ?? NSTemporaryDirectory() + "grocer-cart-\(unique)"
    location = try shared ?? TestEngine.selected.freshLocation("cart")
    cleanup = shared == nil ? DatabaseCleanup(location) : nil
    var configuration = CartServiceConfiguration(
      settings: Settings(
        ["GROCER_DATA_DIR": directory, "GROCER_JWT_SECRET": Self.secret].merging(location.environment) { $1 })
    )
    let name = serviceName ?? "cart-test-\(unique)"
    configuration.serviceName = name
    configuration.checkoutQueue = "\(name).checkout"
    configuration.catalogueQueue = "\(name).catalogue"
    configuration.promoSweepInterval = 0.1
    // A queue a crashed test leaves behind goes away by itself instead of collecting events.
    configuration.queueExpiry = 600
    // No StockService answers this fixture's catalogue queue unless a test starts one.
    configuration.catalogueTimeout = catalogueTimeout
    // Most tests here check the `cart.changed` each version publishes; the default is off.
    configuration.publishesCartChanges = publishesChanges
    self.configuration = configuration
    self.clock = clock
    app = try buildCartService(
      configuration: configuration, logger: .discarding(), clock: clock,
      ids: SequentialIDs(prefix: "ev-\(unique)"))
    client = TestClient(app.router)
    if seed {
      try app.commands.applyCatalogue(hubs: Self.hubs, products: Self.products)
      try app.commands.markCatalogueSynced()
    }
  }

  static let pricing = PricingSettings(
    minimumOrder: eur(1000), deliveryFee: eur(299), freeDeliveryFrom: eur(3000),
    smallBasket: .init(below: eur(1500), fee: eur(100)))

  static let hubs: [Versioned<HubChanged>] = [
    Versioned(
      HubChanged(
        hub: Hub(
          id: "h1", name: "Mitte", hours: .daily(opens: .midnight, closes: .endOfDay), pricing: pricing,
          currency: "EUR")), version: 1),
    Versioned(
      HubChanged(
        hub: Hub(
          id: "h2", name: "Closed", hours: OpeningHours(timeZone: "Europe/Berlin", weekly: []),
          pricing: pricing,
          currency: "EUR")), version: 1),
  ]

  static let products: [Versioned<StockChanged>] = [
    product("h1", "p1", "Oat milk", 129, available: 10, deposit: 25),
    product("h1", "p2", "Bananas", 250, available: 3),
    product("h1", "p3", "Limes", 99, available: 0),
    product("h1", "p4", "Coffee", 1200, available: 50),
    product("h1", "p5", "Tea", 300, available: 99),
    product("h2", "p1", "Oat milk", 129, available: 10, deposit: 25),
  ]

  static func eur(_ units: Int) -> Money { Money(minorUnits: units, currency: "EUR") }

  static func product(
    _ hub: HubID, _ sku: SKU, _ name: String, _ price: Int, available: Int, deposit: Int? = nil,
    version: Int64 = 1
  ) -> Versioned<StockChanged> {
    Versioned(
      StockChanged(
        hub: hub, sku: sku, name: name, available: available, price: eur(price), deposit: deposit.map(eur)),
      version: version)
  }

  static func token(
    _ subject: String, role: Principal.Role = .customer, hubs: [String] = [], clock: ManualClock,
    ttl: TimeInterval = 3600
  ) -> String {
    HS256Signer(secret: secret).sign(
      claims: TokenClaims(
        subject: subject, role: role, hubs: hubs, issuedAt: clock.now(), expiresAt: clock.now() + ttl))
  }

  func customer(_ user: String = "u1") -> [String: String] {
    ["Authorization": "Bearer " + Self.token(user, clock: clock)]
  }

  func staff(_ hubs: [String] = ["*"]) -> [String: String] {
    ["Authorization": "Bearer " + Self.token("staff-1", role: .staff, hubs: hubs, clock: clock)]
  }

  /// `PUT /v1/hubs/{hub}/cart/items/{sku}` answered 200 with the cart.
  @discardableResult
  func put(_ sku: SKU, _ quantity: Int, hub: HubID = "h1", user: String = "u1") async throws -> CartView {
    let response = try await client.put(
      "/v1/hubs/\(hub)/cart/items/\(sku)", json: ["quantity": quantity], headers: customer(user))
    try #require(response.status == 200, "\(response.bodyString)")
    return try response.json(as: CartView.self)
  }

  func cart(hub: HubID = "h1", user: String = "u1", seen: Int64? = nil) async throws -> CartView {
    let response = await client.get(
      "/v1/hubs/\(hub)/cart" + (seen.map { "?seenVersion=\($0)" } ?? ""), headers: customer(user))
    try #require(response.status == 200, "\(response.bodyString)")
    return try response.json(as: CartView.self)
  }

  /// The outbox's pending events, oldest first (the relay is not running in in-process tests).
  func outbox() throws -> [EventEnvelope] {
    try app.store.database.read { db in
      try Outbox.pending(limit: 100_000, in: db).map {
        try JSON.decode(EventEnvelope.self, from: $0.message.body)
      }
    }
  }

  /// The `cart.changed` events of `user` at `hub` in the outbox, oldest first.
  func cartEvents(user: String = "u1", hub: HubID = "h1") throws -> [CartChanged] {
    try outbox().filter { $0.subject == CartChanged.subject(userId: user, hub: hub) }.map {
      try $0.payload(as: CartChanged.self)
    }
  }
}

struct ProblemBody: Decodable {
  var status: Int
  var code: String
  var detail: String
}
