import Foundation
import GrocerContracts
import GrocerCore
import GrocerRuntime

/// Everything CartService reads from its environment, with working local defaults.
public struct CartServiceConfiguration: Sendable {
  /// Name used as the durable queue's name, the inbox consumer and the log label.
  public var serviceName = "cart-service"
  public var dataDirectory: String
  public var jwtSecret: String
  /// The request/reply queue OrderService asks its checkout question on.
  public var checkoutQueue = CartCheckoutQueue.name
  /// The queue StockService answers catalogue requests on.
  public var catalogueQueue = CatalogueQueue.name
  /// How long one catalogue request may take before it is asked again.
  public var catalogueTimeout: TimeInterval = 10
  /// How often expired promo codes are removed from carts.
  public var promoSweepInterval: TimeInterval = 30
  /// How long a cart in checkout is spared the counts a reservation took.
  public var checkoutHold: TimeInterval = 15 * 60
  /// Whether every new cart version is published as `cart.changed`. Off by default: no service
  /// consumes it (SPEC.md lists none), and each one cost a publish per cart change, the checkout's
  /// emptying included. Turn it on for a consumer that wants carts as they change (analytics).
  public var publishesCartChanges = false
  /// When set, the broker deletes this service's queue once unused that long (tests, throw-away
  /// deployments); never in production, where a stopped service must find its events waiting.
  public var queueExpiry: TimeInterval?
  public var settings: Settings

  public init(settings: Settings = Settings()) {
    self.settings = settings
    serviceName = settings.string("GROCER_SERVICE_NAME", default: serviceName)
    dataDirectory = settings.string("GROCER_DATA_DIR", default: "var/data/cart")
    jwtSecret = settings.string("GROCER_JWT_SECRET", default: Settings.localJWTSecret)
    checkoutQueue = settings.string("GROCER_CART_CHECKOUT_QUEUE", default: checkoutQueue)
    catalogueQueue = settings.string("GROCER_CATALOGUE_QUEUE", default: catalogueQueue)
    catalogueTimeout = max(0.1, settings.double("GROCER_CATALOGUE_TIMEOUT", default: catalogueTimeout))
    promoSweepInterval = max(
      0.05, settings.double("GROCER_PROMO_SWEEP_INTERVAL", default: promoSweepInterval))
    checkoutHold = max(0, settings.double("GROCER_CHECKOUT_HOLD", default: checkoutHold))
    publishesCartChanges = settings.bool("GROCER_CART_CHANGED_EVENTS", default: publishesCartChanges)
    let expiry = settings.double("GROCER_QUEUE_EXPIRES", default: 0)
    queueExpiry = expiry > 0 ? expiry : nil
  }

  var databasePath: String { dataDirectory + "/cart.sqlite" }
}
