/// A product's reply shape: `{ sku, name, price, deposit?, unitPrice?, originalPrice?, brand?,
/// category?, image?, available }` (what staff set; the app's catalogue shape is
/// `CatalogueItem`).
extension StockedProduct: Encodable {
  enum CodingKeys: String, CodingKey {
    case sku, name, price, deposit, unitPrice, originalPrice, brand, category, image, available
  }

  public func encode(to encoder: any Encoder) throws {
    var container = encoder.container(keyedBy: CodingKeys.self)
    try container.encode(product.sku, forKey: .sku)
    try container.encode(product.name, forKey: .name)
    try container.encode(product.price, forKey: .price)
    try container.encodeIfPresent(product.deposit, forKey: .deposit)
    try container.encodeIfPresent(product.unitPrice, forKey: .unitPrice)
    try container.encodeIfPresent(product.originalPrice, forKey: .originalPrice)
    try container.encodeIfPresent(product.brand, forKey: .brand)
    try container.encodeIfPresent(product.category, forKey: .category)
    try container.encodeIfPresent(product.image, forKey: .image)
    try container.encode(available, forKey: .available)
  }
}
