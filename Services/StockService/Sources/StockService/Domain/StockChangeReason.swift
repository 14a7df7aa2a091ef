/// The `reason` a `stock.changed` carries: what moved the product.
public enum StockChangeReason {
  public static let productCreated = "productCreated"
  public static let productChanged = "productChanged"
  public static let stockTake = "stockTake"
  public static let reserved = "reserved"
  public static let orderConfirmed = "orderConfirmed"
  public static let orderDeclined = "orderDeclined"
  public static let orderCancelled = "orderCancelled"
  /// A confirmation after the hold expired took the goods off on hand.
  public static let orderConfirmedLate = "orderConfirmedLate"
  public static let demoLoaded = "demoLoaded"
}
