import GrocerContracts
import GrocerCore

/// A product as the catalogue copy holds it at one hub: what a cart line shows of it and how
/// many are left, at the version of the `stock.changed` that brought it.
struct CatalogueProduct: Hashable, Sendable {
  var name: String
  var currency: String
  var price: Int
  var deposit: Int?
  var available: Int
  var version: Int64

  var priceMoney: Money { Money(minorUnits: price, currency: currency) }
  var depositMoney: Money? { deposit.map { Money(minorUnits: $0, currency: currency) } }
}
