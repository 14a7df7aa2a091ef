import GrocerContracts

extension StockChanged {
  public init(hub: HubID, product: Product, available: Int, reason: String?) {
    self.init(
      hub: hub, sku: product.sku, name: product.name, available: available, price: product.price,
      deposit: product.deposit, unitPrice: product.unitPrice, reason: reason)
  }
}
