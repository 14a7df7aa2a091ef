import GrocerContracts
import GrocerCore

extension PricingSettings {
  /// Every amount is ≥ 0, within bounds and in `currency`.
  public func validate(currency: String) throws(DomainError) {
    try MoneyRules.validate(minimumOrder, field: "pricing.minimumOrder", currency: currency)
    try MoneyRules.validate(deliveryFee, field: "pricing.deliveryFee", currency: currency)
    if let freeDeliveryFrom {
      try MoneyRules.validate(freeDeliveryFrom, field: "pricing.freeDeliveryFrom", currency: currency)
    }
    if let smallBasket {
      try MoneyRules.validate(smallBasket.below, field: "pricing.smallBasket.below", currency: currency)
      try MoneyRules.validate(smallBasket.fee, field: "pricing.smallBasket.fee", currency: currency)
      guard smallBasket.below.minorUnits > 0 else {
        throw .invalidPricing("`smallBasket.below` must be more than 0")
      }
    }
  }
}
