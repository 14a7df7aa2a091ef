import GrocerContracts
import GrocerCore

/// A product as the app draws it in the catalogue: `{ sku, name, image: { url, width, height }
/// | null, price, originalPrice | null, deposit | null, unitPrice: { minorUnits, currency, per }
/// | null }`. Never a stock count: that comes fresher from `/stock`.
public enum CatalogueItem {
  /// The item's JSON (keys sorted, as `JSONEncoder` would write them).
  public static func json(_ product: Product) -> [UInt8] {
    var json = JSONBytes(capacity: 320)
    json.beginObject()
    json.key("deposit")
    if let deposit = product.deposit { json.money(deposit) } else { json.null() }
    json.key("image")
    if let image = product.image { image.write(to: &json) } else { json.null() }
    json.key("name")
    json.string(product.name)
    json.key("originalPrice")
    if let original = product.originalPrice { json.money(original) } else { json.null() }
    json.key("price")
    json.money(product.price)
    json.key("sku")
    json.string(product.sku)
    json.key("unitPrice")
    if let unitPrice = product.unitPrice {
      json.beginObject()
      json.key("currency")
      json.string(unitPrice.amount.currency)
      json.key("minorUnits")
      json.int(unitPrice.amount.minorUnits)
      json.key("per")
      json.string(unitPrice.per.rawValue)
      json.endObject()
    } else {
      json.null()
    }
    json.endObject()
    return json.bytes
  }
}
