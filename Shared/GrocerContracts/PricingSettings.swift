import GrocerCore

/// A hub's delivery pricing, which CartService applies to every cart of that hub.
///
/// Wire shape exactly as SPEC.md: `{ "minimumOrder": Money, "deliveryFee": Money,
/// "freeDeliveryFrom": Money | null, "smallBasket": { "below": Money, "fee": Money } | null }`
/// (absent keys decode as `null`; `null` is always written out).
public struct PricingSettings: Codable, Hashable, Sendable {
  /// Below this subtotal checkout is blocked (`belowMinimum`).
  public var minimumOrder: Money
  public var deliveryFee: Money
  /// At or above this subtotal (before discounts) the delivery fee is waived.
  public var freeDeliveryFrom: Money?
  /// A fee added when the subtotal is below `below`.
  public var smallBasket: SmallBasket?

  /// `{ "below": Money, "fee": Money }`.
  public struct SmallBasket: Codable, Hashable, Sendable {
    public var below: Money
    public var fee: Money

    public init(below: Money, fee: Money) {
      self.below = below
      self.fee = fee
    }
  }

  public init(
    minimumOrder: Money, deliveryFee: Money, freeDeliveryFrom: Money? = nil, smallBasket: SmallBasket? = nil
  ) {
    self.minimumOrder = minimumOrder
    self.deliveryFee = deliveryFee
    self.freeDeliveryFrom = freeDeliveryFrom
    self.smallBasket = smallBasket
  }

  public func encode(to encoder: any Encoder) throws {
    var container = encoder.container(keyedBy: CodingKeys.self)
    try container.encode(minimumOrder, forKey: .minimumOrder)
    try container.encode(deliveryFee, forKey: .deliveryFee)
    try container.encode(freeDeliveryFrom, forKey: .freeDeliveryFrom)
    try container.encode(smallBasket, forKey: .smallBasket)
  }
}
