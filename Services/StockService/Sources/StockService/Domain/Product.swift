import GrocerContracts
import GrocerCore

/// One product of a hub's assortment, as the app and CartService see it.
///
/// Wire shape: `{ "sku", "name", "price": Money, "deposit": Money | null,
/// "unitPrice": { "amount": Money, "per": "kg" } | null, "originalPrice": Money | null,
/// "brand", "category", "image" }` (the last three only when set). The stock count is not part
/// of it: it changes far more often and travels on its own (`/stock`, `stock.changed`).
public struct Product: Codable, Hashable, Sendable {
  public var sku: SKU
  public var name: String
  /// Price of one item, in the hub's currency.
  public var price: Money
  /// Refundable deposit (Pfand) per item, shown beside the price and added to totals apart.
  public var deposit: Money?
  /// The comparison price the law asks for (e.g. 2,38 €/kg); informative only, never summed.
  public var unitPrice: UnitPrice?
  /// The price before an offer; set only while the product is on offer (above `price`).
  public var originalPrice: Money?
  /// Searched with the name; not shown on its own.
  public var brand: String?
  /// The category of the hub's tree it is listed under; nil lists it nowhere.
  public var category: CategoryID?
  public var image: ProductImage?

  public init(
    sku: SKU, name: String, price: Money, deposit: Money? = nil, unitPrice: UnitPrice? = nil,
    originalPrice: Money? = nil, brand: String? = nil, category: CategoryID? = nil, image: ProductImage? = nil
  ) {
    self.sku = sku
    self.name = name
    self.price = price
    self.deposit = deposit
    self.unitPrice = unitPrice
    self.originalPrice = originalPrice
    self.brand = brand
    self.category = category
    self.image = image
  }

  public func encode(to encoder: any Encoder) throws {
    var container = encoder.container(keyedBy: CodingKeys.self)
    try container.encode(sku, forKey: .sku)
    try container.encode(name, forKey: .name)
    try container.encode(price, forKey: .price)
    try container.encode(deposit, forKey: .deposit)
    try container.encode(unitPrice, forKey: .unitPrice)
    try container.encode(originalPrice, forKey: .originalPrice)
    try container.encodeIfPresent(brand, forKey: .brand)
    try container.encodeIfPresent(category, forKey: .category)
    try container.encodeIfPresent(image, forKey: .image)
  }

  /// Checks every rule a stored product must follow; `currency` is the hub's.
  public func validate(currency: String) throws(DomainError) {
    try Identifier.validateSKU(sku)
    try ProductUpsert(
      name: name, price: price, deposit: deposit, unitPrice: unitPrice, originalPrice: originalPrice,
      brand: brand, category: category, image: image
    )
    .validateFields(currency: currency)
  }
}
