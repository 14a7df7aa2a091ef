import CartService
import Foundation
import GrocerContracts
import GrocerCore
import Testing

/// The cart exactly in SPEC.md's shape on the wire, and back.
@Suite struct CartViewJSONTests {
  static func eur(_ units: Int) -> Money { Money(minorUnits: units, currency: "EUR") }
  static let opensAt = Date(timeIntervalSince1970: 1_792_562_400)  // 2026-10-21T06:00:00Z

  static func view(
    lines: [CartLineView] = [], adjustments: [CartAdjustment] = [], promo: CartPromoView? = nil,
    blocker: CartBlocker? = nil
  ) -> CartView {
    CartView(
      hub: "h1", version: 18, lines: lines, adjustments: adjustments, promo: promo,
      totals: CartTotals(
        subtotal: eur(387), deposit: eur(75), deliveryFee: eur(299), smallBasketFee: eur(150),
        discount: eur(39),
        total: eur(872)),
      blocker: blocker)
  }

  static let milk = CartLineView(
    sku: "p1", name: "Milk", quantity: 3, unitPrice: eur(129), deposit: eur(25), lineTotal: eur(387))
  static let bread = CartLineView(
    sku: "p2", name: "Bread", quantity: 1, unitPrice: eur(249), deposit: nil, lineTotal: eur(249))

  static func object(_ value: some Encodable) throws -> [String: Any] {
    let data = try JSON.encode(value)
    return try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
  }

  static func money(_ value: Any?) -> Money? {
    guard let object = value as? [String: Any], Set(object.keys) == ["minorUnits", "currency"],
      let units = object["minorUnits"] as? Int, let currency = object["currency"] as? String
    else { return nil }
    return Money(minorUnits: units, currency: currency)
  }

  @Test func aCartHasExactlyTheTopLevelKeysOfTheSpec() throws {
    let json = try Self.object(Self.view(lines: [Self.milk]))
    #expect(Set(json.keys) == ["hub", "version", "lines", "adjustments", "promo", "totals", "blocker"])
    #expect(json["hub"] as? String == "h1")
    #expect(json["version"] as? Int == 18)
    #expect((json["adjustments"] as? [Any])?.isEmpty == true)
  }

  @Test func aLineHasSkuNameQuantityUnitPriceDepositAndLineTotal() throws {
    let json = try Self.object(Self.view(lines: [Self.milk, Self.bread]))
    let lines = try #require(json["lines"] as? [[String: Any]])
    #expect(lines.count == 2)
    for line in lines {
      #expect(Set(line.keys) == ["sku", "name", "quantity", "unitPrice", "deposit", "lineTotal"])
    }
    #expect(lines[0]["sku"] as? String == "p1")
    #expect(lines[0]["name"] as? String == "Milk")
    #expect(lines[0]["quantity"] as? Int == 3)
    #expect(Self.money(lines[0]["unitPrice"]) == Self.eur(129))
    #expect(Self.money(lines[0]["deposit"]) == Self.eur(25))
    #expect(Self.money(lines[0]["lineTotal"]) == Self.eur(387))
    // Always Money, as the app's model types it: zero when the product has none.
    #expect(Self.money(lines[1]["deposit"]) == Self.eur(0))
    let read = try JSON.decode(
      CartView.self, from: try JSON.encode(Self.view(lines: [Self.milk, Self.bread])))
    #expect(read.lines == [Self.milk, Self.bread])
  }

  @Test func theTotalsAreSevenAmountsFeesTheTwoFeesTogether() throws {
    let json = try Self.object(Self.view())
    let totals = try #require(json["totals"] as? [String: Any])
    #expect(
      Set(totals.keys) == [
        "subtotal", "deposit", "deliveryFee", "smallBasketFee", "fees", "discount", "total",
      ])
    #expect(Self.money(totals["fees"]) == Self.eur(449))
    #expect(Self.money(totals["subtotal"]) == Self.eur(387))
    #expect(Self.money(totals["deposit"]) == Self.eur(75))
    #expect(Self.money(totals["deliveryFee"]) == Self.eur(299))
    #expect(Self.money(totals["smallBasketFee"]) == Self.eur(150))
    #expect(Self.money(totals["discount"]) == Self.eur(39))
    #expect(Self.money(totals["total"]) == Self.eur(872))
  }

  /// (adjustment, its keys): `to` only where it means something, never a stray null.
  @Test(
    arguments: [
      (CartAdjustment(.reduced(sku: "p1", to: 2), version: 18), ["sku", "kind", "to", "version"]),
      (CartAdjustment(.outOfStock(sku: "p1"), version: 17), ["sku", "kind", "version"]),
      (
        CartAdjustment(.priceChanged(sku: "p1", from: eur(129), to: eur(149)), version: 16),
        ["sku", "kind", "from", "to", "version"]
      ),
      (CartAdjustment(.promoRemoved(code: "SPRING"), version: 15), ["kind", "code", "version"]),
    ] as [(CartAdjustment, [String])])
  func eachAdjustmentKindHasItsOwnKeys(adjustment: CartAdjustment, keys: [String]) throws {
    let json = try Self.object(Self.view(adjustments: [adjustment]))
    let adjustments = try #require(json["adjustments"] as? [[String: Any]])
    let encoded = try #require(adjustments.first)
    #expect(Set(encoded.keys) == Set(keys))
    #expect(encoded["kind"] as? String == adjustment.kind)
    #expect(encoded["version"] as? Int == Int(adjustment.version))
    switch adjustment.change {
    case .reduced(let sku, let to):
      #expect(encoded["sku"] as? String == sku)
      #expect(encoded["to"] as? Int == to)
    case .outOfStock(let sku):
      #expect(encoded["sku"] as? String == sku)
    case .priceChanged(let sku, let from, let to):
      #expect(encoded["sku"] as? String == sku)
      #expect(Self.money(encoded["from"]) == from)
      #expect(Self.money(encoded["to"]) == to)
    case .promoRemoved(let code):
      #expect(encoded["code"] as? String == code)
    }
  }

  @Test func noPromoAndNoBlockerAreNull() throws {
    let json = try Self.object(Self.view())
    #expect(json["promo"] is NSNull)
    #expect(json["blocker"] is NSNull)
  }

  @Test(
    arguments: [
      CartPromoView(code: "SPRING", description: "10% off your items", applied: true, notice: nil),
      CartPromoView(
        code: "SPRING", description: "10% off your items", applied: false,
        notice: "Add 3.10 EUR more to use this code."),
    ])
  func aPromoHasCodeDescriptionAppliedAndNotice(promo: CartPromoView) throws {
    let json = try Self.object(Self.view(promo: promo))
    let encoded = try #require(json["promo"] as? [String: Any])
    #expect(Set(encoded.keys) == ["code", "description", "applied", "notice"])
    #expect(encoded["code"] as? String == promo.code)
    #expect(encoded["description"] as? String == promo.description)
    #expect(encoded["applied"] as? Bool == promo.applied)
    if let notice = promo.notice {
      #expect(encoded["notice"] as? String == notice)
    } else {
      #expect(encoded["notice"] is NSNull)
    }
  }

  @Test func aBelowMinimumBlockerSaysWhatIsMissing() throws {
    let json = try Self.object(Self.view(blocker: .belowMinimum(missing: Self.eur(613))))
    let blocker = try #require(json["blocker"] as? [String: Any])
    #expect(Set(blocker.keys) == ["kind", "missing"])
    #expect(blocker["kind"] as? String == "belowMinimum")
    #expect(Self.money(blocker["missing"]) == Self.eur(613))
  }

  @Test func aHubClosedBlockerSaysWhenItOpensAsRFC3339() throws {
    let json = try Self.object(Self.view(blocker: .hubClosed(opensAt: Self.opensAt)))
    let blocker = try #require(json["blocker"] as? [String: Any])
    #expect(Set(blocker.keys) == ["kind", "opensAt"])
    #expect(blocker["kind"] as? String == "hubClosed")
    #expect(blocker["opensAt"] as? String == "2026-10-21T06:00:00Z")
  }

  @Test func aHubClosedBlockerWithoutAnOpeningHasANullOpensAt() throws {
    let json = try Self.object(Self.view(blocker: .hubClosed(opensAt: nil)))
    let blocker = try #require(json["blocker"] as? [String: Any])
    #expect(Set(blocker.keys) == ["kind", "opensAt"])
    #expect(blocker["kind"] as? String == "hubClosed")
    #expect(blocker["opensAt"] is NSNull)
  }

  static let roundTrips: [CartView] = [
    view(),
    view(lines: [milk, bread]),
    view(
      lines: [milk], adjustments: [CartAdjustment(.reduced(sku: "p1", to: 3), version: 18)],
      promo: CartPromoView(code: "SPRING", description: "Spring", applied: true, notice: nil),
      blocker: .belowMinimum(missing: eur(613))),
    view(
      adjustments: [
        CartAdjustment(.outOfStock(sku: "p2"), version: 14),
        CartAdjustment(.priceChanged(sku: "p1", from: eur(129), to: eur(149)), version: 15),
        CartAdjustment(.promoRemoved(code: "SPRING"), version: 16),
      ],
      promo: CartPromoView(
        code: "BIG", description: "5.00 EUR off", applied: false, notice: "Add 1.00 EUR more."),
      blocker: .hubClosed(opensAt: opensAt)),
    view(lines: [bread], blocker: .hubClosed(opensAt: nil)),
  ]

  @Test(arguments: roundTrips)
  func decodingTheEncodedCartGivesItBack(view: CartView) throws {
    let decoded = try JSON.decode(CartView.self, from: try JSON.encode(view))
    #expect(decoded == view)
  }

  @Test(
    arguments: roundTrips + [
      view(
        lines: [
          CartLineView(
            sku: "p-1", name: "Bio \"Milch\" 1/2 \\ l\n\t\u{1} Ä 🥛", quantity: 99, unitPrice: eur(0),
            deposit: nil,
            lineTotal: eur(0))
        ],
        promo: CartPromoView(code: "X", description: "ünï / côdé", applied: false, notice: "a\rb"))
    ])
  func theHandWrittenReplyIsTheEncodersBytes(view: CartView) throws {
    let expected = String(decoding: try JSON.encode(view), as: UTF8.self)
    #expect(String(decoding: view.jsonBytes(), as: UTF8.self) == expected)
  }

  @Test func theHandWrittenCheckoutReplyIsTheEncodersBytes() throws {
    let view = Self.view(lines: [Self.milk, Self.bread], blocker: .hubClosed(opensAt: Self.opensAt))
    for reply in [
      CartCheckoutReply(cart: view, matches: true),
      CartCheckoutReply(cart: view, matches: false),
      CartCheckoutReply(
        cart: nil, matches: false, error: RemoteError(code: "unknownHub", detail: "no \"h9\"")),
    ] {
      #expect(
        String(decoding: reply.jsonBytes(), as: UTF8.self)
          == String(decoding: try JSON.encode(reply), as: UTF8.self))
    }
  }

  @Test(arguments: roundTrips)
  func aCheckoutReplyIsReadByHandOrLeftToTheDecoder(view: CartView) throws {
    for reply in [
      CartCheckoutReply(cart: view, matches: true),
      CartCheckoutReply(cart: nil, matches: false, error: RemoteError(code: "unknownHub", detail: "no h9")),
    ] {
      let bytes = reply.jsonBytes()
      var reader = JSONReader(bytes)
      let simple = reply.cart.map { $0.adjustments.isEmpty && $0.blocker == nil } ?? true
      if simple {
        #expect(try CartCheckoutReply(reading: &reader) == reply)
      } else {
        // Adjustments and blockers are JSONDecoder's: the reader refuses them.
        #expect(throws: JSONReader.Failure.self) { try CartCheckoutReply(reading: &reader) }
      }
      #expect(try JSON.decode(CartCheckoutReply.self, from: Data(bytes)) == reply)
    }
  }

  @Test func theHandWrittenCheckoutRequestIsTheEncodersBytes() throws {
    for request in [
      CartCheckoutRequest(kind: .price, userId: "u\"1", hub: "h1", cartVersion: 7, correlationId: "r-1"),
      CartCheckoutRequest(
        kind: .applyCounts, userId: "u2", hub: "h2", cartVersion: nil,
        counts: [.init(sku: "p1", available: 0), .init(sku: "p2", available: 3)], correlationId: nil),
    ] {
      #expect(
        String(decoding: request.jsonBytes, as: UTF8.self)
          == String(decoding: try JSON.encode(request), as: UTF8.self))
    }
  }

  @Test func checkoutRequestsAreReadByHandAsTheDecoderReadsThem() throws {
    for request in [
      CartCheckoutRequest(kind: .price, userId: "u\"1", hub: "h1", cartVersion: 7, correlationId: "r-1"),
      CartCheckoutRequest(kind: .price, userId: "u3", hub: "h3"),
      CartCheckoutRequest(
        kind: .applyCounts, userId: "u2", hub: "h2", cartVersion: nil,
        counts: [.init(sku: "p1", available: 0), .init(sku: "p2", available: 3)], correlationId: nil),
    ] {
      var reader = JSONReader(request.jsonBytes)
      #expect(try CartCheckoutRequest(reading: &reader) == request)
      #expect(try JSON.decode(CartCheckoutRequest.self, from: Data(request.jsonBytes)) == request)
    }
    // What the reader refuses, the decoder judges: an unknown kind or a missing user is its error.
    for odd in [#"{"kind":"steal","userId":"u","hub":"h1"}"#, #"{"kind":"price","hub":"h1"}"#] {
      #expect(throws: DecodingError.self) { try JSON.read(CartCheckoutRequest.self, from: Data(odd.utf8)) }
    }
  }

  @Test(arguments: [nil, "SPRING"] as [String?])
  func theHandWrittenCartChangedIsTheEncodersBytes(promo: String?) throws {
    let payload = CartChanged(
      userId: "u \"1\"", hub: "h1", version: 7,
      lines: [.init(sku: "p1", quantity: 2), .init(sku: "p2", quantity: 1)],
      promo: promo, reason: "customer")
    #expect(
      String(decoding: payload.jsonBytes(), as: UTF8.self)
        == String(decoding: try JSON.encode(payload), as: UTF8.self))
  }
}
