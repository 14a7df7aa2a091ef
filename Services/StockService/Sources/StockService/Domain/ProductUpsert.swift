import GrocerContracts
import GrocerCore

/// Body of staff `PUT /v1/hubs/{hub}/products/{sku}`: `{ name, price, deposit?, unitPrice?,
/// originalPrice?, brand?, category?, image? }`. A field left out is cleared (PUT replaces).
///
/// Unknown top-level fields are refused (a typo like `prize` must not silently keep the old
/// price). Decode with `StrictJSON.decode(ProductUpsert.self, from:)`, then `validate`.
public struct ProductUpsert: StrictBody, Encodable, Hashable {
  public var name: String
  public var price: Money
  public var deposit: Money?
  public var unitPrice: UnitPrice?
  public var originalPrice: Money?
  public var brand: String?
  public var category: CategoryID?
  public var image: ProductImage?

  public static let allowedKeys: Set<String> = [
    "name", "price", "deposit", "unitPrice", "originalPrice", "brand", "category", "image",
  ]
  public static let maximumNameLength = 200

  public init(
    name: String, price: Money, deposit: Money? = nil, unitPrice: UnitPrice? = nil,
    originalPrice: Money? = nil,
    brand: String? = nil, category: CategoryID? = nil, image: ProductImage? = nil
  ) {
    self.name = name
    self.price = price
    self.deposit = deposit
    self.unitPrice = unitPrice
    self.originalPrice = originalPrice
    self.brand = brand
    self.category = category
    self.image = image
  }

  /// The product to store: `sku` from the path, amounts in the hub's `currency`, the name
  /// trimmed of surrounding white space.
  public func validate(sku: SKU, currency: String) throws(DomainError) -> Product {
    try Identifier.validateSKU(sku)
    try validateFields(currency: currency)
    return Product(
      sku: sku, name: Self.trimmed(name), price: price, deposit: deposit, unitPrice: unitPrice,
      originalPrice: originalPrice, brand: brand.map(Self.trimmed).flatMap { $0.isEmpty ? nil : $0 },
      category: category, image: image)
  }

  func validateFields(currency: String) throws(DomainError) {
    let name = Self.trimmed(self.name)
    guard !name.isEmpty else { throw .invalidName("must not be empty") }
    guard name.count <= Self.maximumNameLength else {
      throw .invalidName("must be at most \(Self.maximumNameLength) characters")
    }
    guard !name.unicodeScalars.contains(where: { $0.properties.generalCategory == .control }) else {
      throw .invalidName("must not contain control characters")
    }
    try MoneyRules.validate(price, field: "price", currency: currency)
    if let deposit { try MoneyRules.validate(deposit, field: "deposit", currency: currency) }
    if let unitPrice {
      do {
        try MoneyRules.validate(unitPrice.amount, field: "unitPrice.amount", currency: currency)
      } catch {
        if case .currencyMismatch = error { throw error }
        throw .invalidUnitPrice("`amount` must be 0 to \(MoneyRules.maximumMinorUnits) minor units")
      }
    }
    if let originalPrice {
      try MoneyRules.validate(originalPrice, field: "originalPrice", currency: currency)
      // An original price at or below the price is no offer: the app would strike through a
      // price that is not higher.
      guard originalPrice.minorUnits > price.minorUnits else {
        throw .invalidPrice(field: "originalPrice", detail: "must be above `price` (it marks an offer)")
      }
    }
    if let brand {
      guard Self.trimmed(brand).count <= Self.maximumNameLength else {
        throw .invalidBrand("must be at most \(Self.maximumNameLength) characters")
      }
    }
    if let category {
      guard Identifier.isValid(category) else { throw .unknownCategory(category) }
    }
    try image?.validate(field: "image")
  }

  static func trimmed(_ text: String) -> String {
    var slice = Substring(text)
    while let first = slice.first, first.isWhitespace { slice.removeFirst() }
    while let last = slice.last, last.isWhitespace { slice.removeLast() }
    return String(slice)
  }
}
