import GrocerContracts

extension CartPricing.Line {
  /// A line as a reply showed it.
  init(_ view: CartLineView) {
    self.init(
      sku: view.sku, name: view.name, quantity: view.quantity, unitPrice: view.unitPrice,
      deposit: view.deposit)
  }
}
