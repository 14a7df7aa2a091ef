import CartService
import Foundation
import GrocerContracts
import GrocerCore
import Testing

/// SPEC.md's CartService totals, boundary by boundary, on `CartPricing.price`.
@Suite struct CartPricingTests {
  static let now = Date(timeIntervalSince1970: 1_792_521_720)  // 2026-10-20T18:42:00Z
  static let open = HoursStatus(isOpen: true, opensAt: nil, closesAt: nil)

  static func eur(_ units: Int) -> Money { Money(minorUnits: units, currency: "EUR") }

  /// Pricing with nothing but what a test sets: no minimum, no fee unless given.
  static func pricing(
    minimumOrder: Int = 0, deliveryFee: Int = 0, freeDeliveryFrom: Int? = nil, smallBasket: (Int, Int)? = nil
  ) -> PricingSettings {
    PricingSettings(
      minimumOrder: eur(minimumOrder), deliveryFee: eur(deliveryFee),
      freeDeliveryFrom: freeDeliveryFrom.map(eur),
      smallBasket: smallBasket.map { PricingSettings.SmallBasket(below: eur($0.0), fee: eur($0.1)) })
  }

  static func price(
    _ lines: [CartPricing.Line], pricing: PricingSettings, promo: Promotion? = nil, hours: HoursStatus = open,
    hub: HubID = "h1"
  ) -> CartPricing.Result {
    CartPricing.price(
      lines, promo: promo,
      context: CartPricing.Context(hub: hub, currency: "EUR", pricing: pricing, hours: hours, now: now))
  }

  /// A cart whose subtotal is exactly `subtotal` (one line, quantity 1), or empty for 0.
  static func cart(subtotal: Int) -> [CartPricing.Line] {
    subtotal == 0 ? [] : [CartPricing.Line(sku: "p1", name: "Milk", quantity: 1, unitPrice: eur(subtotal))]
  }

  // MARK: Delivery fee

  @Test(arguments: [(1999, 299), (2000, 0), (2001, 0), (1, 299), (100_000, 0)])
  func theDeliveryFeeIsWaivedAtTheFreeDeliveryThreshold(subtotal: Int, fee: Int) {
    let result = Self.price(
      Self.cart(subtotal: subtotal), pricing: Self.pricing(deliveryFee: 299, freeDeliveryFrom: 2000))
    #expect(result.totals.deliveryFee == Self.eur(fee))
    #expect(result.totals.total == Self.eur(subtotal + fee))
  }

  /// (subtotal, promo) where the promo takes the items below the 2000 threshold.
  @Test(
    arguments: [
      (2000, Promotion(code: "FIVE", kind: .amountOff, amount: eur(500))),
      (2000, Promotion(code: "HALF", kind: .percentOff, percent: 50)),
      (2500, Promotion(code: "ALL", kind: .percentOff, percent: 100)),
      (2000, Promotion(code: "ONE", kind: .amountOff, amount: eur(1))),
    ])
  func theFreeDeliveryThresholdIsMeasuredBeforeTheDiscount(subtotal: Int, promo: Promotion) {
    let result = Self.price(
      Self.cart(subtotal: subtotal), pricing: Self.pricing(deliveryFee: 299, freeDeliveryFrom: 2000),
      promo: promo)
    #expect(result.promo?.applied == true)
    #expect(result.totals.discount.minorUnits > 0)
    #expect(result.totals.subtotal.minorUnits - result.totals.discount.minorUnits < 2000)
    #expect(result.totals.deliveryFee == Self.eur(0))
    #expect(result.totals.total == Self.eur(subtotal - result.totals.discount.minorUnits))
  }

  @Test(arguments: [1, 1999, 2000, 1_000_000])
  func withoutAFreeDeliveryThresholdTheFeeIsAlwaysCharged(subtotal: Int) {
    let result = Self.price(Self.cart(subtotal: subtotal), pricing: Self.pricing(deliveryFee: 299))
    #expect(result.totals.deliveryFee == Self.eur(299))
    #expect(result.totals.total == Self.eur(subtotal + 299))
  }

  // MARK: Small-basket fee

  @Test(arguments: [(1, 150), (1499, 150), (1500, 0), (1501, 0)])
  func theSmallBasketFeeAppliesOnlyBelowItsThreshold(subtotal: Int, fee: Int) {
    let result = Self.price(Self.cart(subtotal: subtotal), pricing: Self.pricing(smallBasket: (1500, 150)))
    #expect(result.totals.smallBasketFee == Self.eur(fee))
    #expect(result.totals.total == Self.eur(subtotal + fee))
  }

  @Test func theSmallBasketFeeIsMeasuredBeforeTheDiscount() {
    let promo = Promotion(code: "FIVE", kind: .amountOff, amount: Self.eur(500))
    let result = Self.price(
      Self.cart(subtotal: 1500), pricing: Self.pricing(smallBasket: (1500, 150)), promo: promo)
    #expect(result.totals.discount == Self.eur(500))
    #expect(result.totals.smallBasketFee == Self.eur(0))
  }

  @Test(arguments: [1, 100, 1_000_000])
  func withoutASmallBasketRuleThereIsNoSmallBasketFee(subtotal: Int) {
    let result = Self.price(Self.cart(subtotal: subtotal), pricing: Self.pricing(deliveryFee: 100))
    #expect(result.totals.smallBasketFee == Self.eur(0))
  }

  // MARK: Minimum order and blockers

  @Test(
    arguments: [
      (999, CartBlocker.belowMinimum(missing: eur(1))), (1, .belowMinimum(missing: eur(999))), (1000, nil),
      (1001, nil),
    ] as [(Int, CartBlocker?)])
  func belowTheMinimumOrderTheBlockerSaysHowMuchIsMissing(subtotal: Int, blocker: CartBlocker?) {
    let result = Self.price(Self.cart(subtotal: subtotal), pricing: Self.pricing(minimumOrder: 1000))
    #expect(result.blocker == blocker)
  }

  @Test func theMinimumOrderIsMeasuredOnTheSubtotalBeforeTheDiscount() {
    let promo = Promotion(code: "FIVE", kind: .amountOff, amount: Self.eur(500))
    let result = Self.price(
      Self.cart(subtotal: 1000), pricing: Self.pricing(minimumOrder: 1000), promo: promo)
    #expect(result.totals.discount == Self.eur(500))
    #expect(result.blocker == nil)
  }

  @Test(arguments: [(0, nil), (1000, CartBlocker.belowMinimum(missing: eur(1000)))] as [(Int, CartBlocker?)])
  func anEmptyCartOwesNothingButIsStillBelowTheMinimum(minimumOrder: Int, blocker: CartBlocker?) {
    let pricing = Self.pricing(
      minimumOrder: minimumOrder, deliveryFee: 299, freeDeliveryFrom: 2000, smallBasket: (1500, 150))
    let result = Self.price(
      [], pricing: pricing, promo: Promotion(code: "ALL", kind: .percentOff, percent: 10))
    #expect(result.lines.isEmpty)
    #expect(result.totals == CartTotals.zero("EUR"))
    #expect(result.blocker == blocker)
  }

  @Test(
    arguments: [
      (500, Date(timeIntervalSince1970: 1_792_569_600)), (500, nil),
      (5000, Date(timeIntervalSince1970: 1_792_569_600)),
      (0, nil),
    ] as [(Int, Date?)])
  func aClosedHubBlocksBeforeTheMinimumOrder(subtotal: Int, opensAt: Date?) {
    let result = Self.price(
      Self.cart(subtotal: subtotal), pricing: Self.pricing(minimumOrder: 1000),
      hours: HoursStatus(isOpen: false, opensAt: opensAt, closesAt: nil))
    #expect(result.blocker == .hubClosed(opensAt: opensAt))
  }

  // MARK: Promotions

  /// (percent, subtotal, discount): half away from zero to the minor unit.
  @Test(
    arguments: [
      (10, 1005, 101), (10, 1004, 100), (15, 333, 50), (33, 1, 0), (50, 1, 1), (50, 3, 2), (1, 49, 0),
      (1, 50, 1),
      (99, 101, 100), (100, 1234, 1234), (100, 1, 1), (25, 0, 0),
    ])
  func aPercentageRoundsHalfAwayFromZero(percent: Int, subtotal: Int, discount: Int) {
    let promo = Promotion(code: "P", kind: .percentOff, percent: percent)
    #expect(
      promo.evaluate(subtotal: Self.eur(subtotal), hub: "h1", now: Self.now) == .discount(Self.eur(discount)))
    let result = Self.price(Self.cart(subtotal: subtotal), pricing: Self.pricing(), promo: promo)
    #expect(result.totals.discount == Self.eur(discount))
    #expect(result.totals.total == Self.eur(subtotal - discount))
  }

  @Test func aPercentageIsTakenOfTheWholeSubtotalNotRoundedPerLine() {
    // Two lines of 105: 10% of each rounds to 11 (22), 10% of 210 is 21.
    let lines = [
      CartPricing.Line(sku: "p1", name: "A", quantity: 1, unitPrice: Self.eur(105)),
      CartPricing.Line(sku: "p2", name: "B", quantity: 1, unitPrice: Self.eur(105)),
    ]
    let result = Self.price(
      lines, pricing: Self.pricing(), promo: Promotion(code: "TEN", kind: .percentOff, percent: 10))
    #expect(result.totals.discount == Self.eur(21))
  }

  /// (amount off, subtotal, discount): never more than the items.
  @Test(arguments: [(500, 300, 300), (300, 300, 300), (299, 300, 299), (1, 1, 1), (10_000_000, 1, 1)])
  func anAmountOffIsCappedAtTheSubtotal(amount: Int, subtotal: Int, discount: Int) {
    let promo = Promotion(code: "OFF", kind: .amountOff, amount: Self.eur(amount))
    let result = Self.price(Self.cart(subtotal: subtotal), pricing: Self.pricing(), promo: promo)
    #expect(result.promo?.applied == true)
    #expect(result.totals.discount == Self.eur(discount))
    #expect(result.totals.total == Self.eur(subtotal - discount))
  }

  @Test(
    arguments: [
      Promotion(code: "ALL", kind: .percentOff, percent: 100),
      Promotion(code: "HUGE", kind: .amountOff, amount: eur(1_000_000)),
    ])
  func aDiscountNeverComesOffTheDepositOrTheFees(promo: Promotion) {
    let lines = [
      CartPricing.Line(sku: "p1", name: "Water", quantity: 4, unitPrice: Self.eur(100), deposit: Self.eur(25))
    ]
    let result = Self.price(
      lines, pricing: Self.pricing(deliveryFee: 299, freeDeliveryFrom: 2000, smallBasket: (1500, 150)),
      promo: promo)
    #expect(result.totals.subtotal == Self.eur(400))
    #expect(result.totals.discount == Self.eur(400))
    #expect(result.totals.deposit == Self.eur(100))
    #expect(result.totals.deliveryFee == Self.eur(299))
    #expect(result.totals.smallBasketFee == Self.eur(150))
    #expect(result.totals.total == Self.eur(100 + 299 + 150))
  }

  /// (subtotal, promo, discount, deposit, delivery fee, small-basket fee, total).
  @Test(
    arguments: [
      (1000, nil, 0, 150, 299, 150, 1599),
      (1000, Promotion(code: "TEN", kind: .percentOff, percent: 10), 100, 150, 299, 150, 1499),
      (2000, Promotion(code: "TWO", kind: .amountOff, amount: eur(200)), 200, 300, 0, 0, 2100),
      (1500, nil, 0, 225, 299, 0, 2024),
    ] as [(Int, Promotion?, Int, Int, Int, Int, Int)])
  func theTotalIsSubtotalMinusDiscountPlusDepositAndFees(
    units: Int, promo: Promotion?, discount: Int, deposit: Int, deliveryFee: Int, smallBasketFee: Int,
    total: Int
  ) {
    // Bottles of 100 with a 15 deposit each.
    let lines = [
      CartPricing.Line(
        sku: "p1", name: "Water", quantity: units / 100, unitPrice: Self.eur(100), deposit: Self.eur(15))
    ]
    let result = Self.price(
      lines, pricing: Self.pricing(deliveryFee: 299, freeDeliveryFrom: 2000, smallBasket: (1500, 150)),
      promo: promo)
    let expected = CartTotals(
      subtotal: Self.eur(units), deposit: Self.eur(deposit), deliveryFee: Self.eur(deliveryFee),
      smallBasketFee: Self.eur(smallBasketFee), discount: Self.eur(discount), total: Self.eur(total))
    #expect(result.totals == expected)
    #expect(total == units - discount + deposit + deliveryFee + smallBasketFee)
  }

  /// (subtotal, missing in the notice): the code stays, with no discount.
  @Test(arguments: [(1690, "3.10 EUR"), (1999, "0.01 EUR"), (1, "19.99 EUR"), (0, "20.00 EUR")])
  func aPromoBelowItsMinimumSubtotalStaysWithANoticeOfWhatIsMissing(subtotal: Int, missing: String) throws {
    let promo = Promotion(code: "SPRING", kind: .percentOff, percent: 10, minimumSubtotal: Self.eur(2000))
    let result = Self.price(
      Self.cart(subtotal: subtotal), pricing: Self.pricing(deliveryFee: 299), promo: promo)
    let view = try #require(result.promo)
    #expect(view.code == "SPRING")
    #expect(view.description == "10% off your items")
    #expect(view.applied == false)
    #expect(view.notice?.contains(missing) == true)
    #expect(result.totals.discount == Self.eur(0))
    #expect(result.totals.total == Self.eur(subtotal + (subtotal == 0 ? 0 : 299)))
  }

  @Test(arguments: [2000, 2001])
  func aPromoAtOrAboveItsMinimumSubtotalApplies(subtotal: Int) {
    let promo = Promotion(
      code: "SPRING", kind: .amountOff, amount: Self.eur(300), minimumSubtotal: Self.eur(2000))
    let result = Self.price(Self.cart(subtotal: subtotal), pricing: Self.pricing(), promo: promo)
    #expect(
      result.promo
        == CartPromoView(code: "SPRING", description: "3.00 EUR off your items", applied: true, notice: nil))
    #expect(result.totals.discount == Self.eur(300))
  }

  /// (valid until, relative to now, applied).
  @Test(arguments: [(-3600.0, false), (0.0, false), (1.0, true), (86_400.0, true)])
  func anExpiredPromoGivesNoDiscountAndANotice(validFor: TimeInterval, applied: Bool) throws {
    let promo = Promotion(
      code: "SPRING", kind: .percentOff, percent: 10, validUntil: Self.now.addingTimeInterval(validFor))
    let result = Self.price(Self.cart(subtotal: 1000), pricing: Self.pricing(), promo: promo)
    let view = try #require(result.promo)
    #expect(view.applied == applied)
    #expect((view.notice != nil) == !applied)
    #expect(result.totals.discount == Self.eur(applied ? 100 : 0))
    #expect(promo.hasExpired(at: Self.now) == !applied)
  }

  /// (hubs of the promo, applied at h1).
  @Test(
    arguments: [(["h2"], false), (["h2", "h3"], false), (["h1"], true), (["h2", "h1"], true), (nil, true)]
      as [([HubID]?, Bool)])
  func aPromoForOtherHubsGivesNoDiscountAndANotice(hubs: [HubID]?, applied: Bool) throws {
    let promo = Promotion(code: "SPRING", kind: .amountOff, amount: Self.eur(100), hubs: hubs)
    let result = Self.price(Self.cart(subtotal: 1000), pricing: Self.pricing(), promo: promo, hub: "h1")
    let view = try #require(result.promo)
    #expect(view.applied == applied)
    #expect((view.notice != nil) == !applied)
    #expect(result.totals.discount == Self.eur(applied ? 100 : 0))
  }

  @Test(
    arguments: [
      Promotion(code: "USD", kind: .amountOff, amount: Money(minorUnits: 100, currency: "USD")),
      Promotion(
        code: "USDMIN", kind: .percentOff, percent: 10, minimumSubtotal: Money(minorUnits: 1, currency: "USD")
      ),
    ])
  func aPromoInAnotherCurrencyGivesNoDiscountAndANotice(promo: Promotion) throws {
    let result = Self.price(Self.cart(subtotal: 1000), pricing: Self.pricing(), promo: promo)
    let view = try #require(result.promo)
    #expect(view.applied == false)
    #expect(view.notice?.contains("EUR") == true)
    #expect(result.totals.discount == Self.eur(0))
  }

  @Test func withoutAPromoThereIsNoPromoViewAndNoDiscount() {
    let result = Self.price(Self.cart(subtotal: 1000), pricing: Self.pricing())
    #expect(result.promo == nil)
    #expect(result.totals.discount == Self.eur(0))
  }

  // MARK: Lines

  /// (unit price, quantity, deposit per unit): line total and the deposit it adds.
  @Test(
    arguments: [(129, 1, nil), (129, 3, 25), (249, 99, 8), (1, 2, 0), (100_000, 99, nil)]
      as [(Int, Int, Int?)])
  func aLineTotalIsUnitPriceTimesQuantityAndItsDepositIsApart(unitPrice: Int, quantity: Int, deposit: Int?)
    throws
  {
    let line = CartPricing.Line(
      sku: "p1", name: "Milk", quantity: quantity, unitPrice: Self.eur(unitPrice),
      deposit: deposit.map(Self.eur))
    let result = Self.price([line], pricing: Self.pricing())
    let view = try #require(result.lines.first)
    #expect(
      view
        == CartLineView(
          sku: "p1", name: "Milk", quantity: quantity, unitPrice: Self.eur(unitPrice),
          deposit: deposit.map(Self.eur),
          lineTotal: Self.eur(unitPrice * quantity)))
    #expect(result.totals.subtotal == Self.eur(unitPrice * quantity))
    #expect(result.totals.deposit == Self.eur((deposit ?? 0) * quantity))
    #expect(result.totals.total == Self.eur(unitPrice * quantity + (deposit ?? 0) * quantity))
  }

  @Test func depositsAndLineTotalsAreSummedOverEveryLineInOrder() {
    let lines = [
      CartPricing.Line(sku: "p1", name: "Milk", quantity: 3, unitPrice: Self.eur(129), deposit: Self.eur(25)),
      CartPricing.Line(sku: "p2", name: "Bread", quantity: 2, unitPrice: Self.eur(249)),
      CartPricing.Line(sku: "p3", name: "Beer", quantity: 6, unitPrice: Self.eur(89), deposit: Self.eur(8)),
    ]
    let result = Self.price(lines, pricing: Self.pricing())
    #expect(result.lines.map(\.sku) == ["p1", "p2", "p3"])
    #expect(result.lines.map(\.lineTotal) == [Self.eur(387), Self.eur(498), Self.eur(534)])
    #expect(result.totals.subtotal == Self.eur(387 + 498 + 534))
    #expect(result.totals.deposit == Self.eur(75 + 48))
    #expect(result.totals.total == Self.eur(387 + 498 + 534 + 75 + 48))
  }
}
