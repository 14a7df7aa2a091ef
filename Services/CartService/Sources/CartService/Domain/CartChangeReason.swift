/// Why a cart got a new version, as its `cart.changed` says (`reason`).
enum CartChangeReason {
  /// The customer set a quantity.
  static let customer = "customer"
  /// A promo code was put on, taken off, redefined, deleted or ran out.
  static let promo = "promo"
  /// A reservation found less than the cart holds.
  static let shortfall = "shortfall"
  /// The order was confirmed and the cart emptied.
  static let orderConfirmed = "orderConfirmed"
  /// A product's count took from a line.
  static let stock = "stock"
  /// A product's price, name or deposit changed.
  static let price = "price"
  /// The hub's pricing, hours or currency changed.
  static let hub = "hub"
}
