import Foundation
import GrocerContracts
import GrocerCore
import Testing

@testable import StockService

@Suite struct RequestValidationTests {
  @Test(arguments: [
    ("p1", true), ("P-00_1.a", true), (String(repeating: "x", count: 64), true),
    ("", false), (String(repeating: "x", count: 65), false), ("p 1", false), ("p/1", false),
    ("p,1", false), ("pä", false), ("p\"1", false),
  ])
  func identifiersFollowTheRule(id: String, valid: Bool) {
    #expect(Identifier.isValid(id) == valid)
  }

  @Test(
    arguments: [
      (#"{"available":3}"#, nil, 3),
      (#"{"available":2.0}"#, nil, 2),
      (#"{"available":0}"#, nil, 0),
      (#"{"available":1000000}"#, nil, 1_000_000),
      (#"{"available":"3"}"#, "wrongType", 0),
      (#"{"available":2.5}"#, "wrongType", 0),
      (#"{"available":true}"#, "wrongType", 0),
      (#"{"available":null}"#, "wrongType", 0),
      (#"{"available":1e30}"#, "wrongType", 0),
      (#"{}"#, "missingField", 0),
      (#"{"available":3,"note":"x"}"#, "unknownField", 0),
      (#"[3]"#, "wrongType", 0),
      (#"3"#, "wrongType", 0),
      (#"{"available":"#, "malformedJSON", 0),
      (#""#, "malformedJSON", 0),
      (#"{"available":-1}"#, "invalidCount", 0),
      (#"{"available":1000001}"#, "invalidCount", 0),
    ] as [(String, String?, Int)])
  func stockSetDecodesStrictly(json: String, code: String?, expected: Int) throws {
    var count = -1
    let result = errorCode { () throws(DomainError) in
      count = try StockSet.decodeStrict(from: data(json)).validate()
    }
    #expect(result == code)
    if code == nil { #expect(count == expected) }
  }

  @Test func wrongTypeNamesTheFieldAndWhatWasExpected() {
    #expect(throws: DomainError.wrongType(field: "available", expected: "an integer")) {
      try StockSet.decodeStrict(from: data(#"{"available":"3"}"#))
    }
    #expect(throws: DomainError.wrongType(field: "price.minorUnits", expected: "an integer")) {
      try ProductUpsert.decodeStrict(from: data(#"{"name":"M","price":{"minorUnits":1.5,"currency":"EUR"}}"#))
    }
    #expect(throws: DomainError.wrongType(field: "available", expected: "an integer")) {
      try StockSet.decodeStrict(from: data(#"{"available":2.5}"#))
    }
    #expect(throws: DomainError.unknownField("avaliable")) {
      try StockSet.decodeStrict(from: data(#"{"avaliable":3,"available":1}"#))
    }
    #expect(throws: DomainError.missingField("price.currency")) {
      try ProductUpsert.decodeStrict(from: data(#"{"name":"Milch","price":{"minorUnits":1}}"#))
    }
  }

  @Test(
    arguments: [
      (#"{"delta":-3,"reason":"damaged"}"#, nil),
      (#"{"delta":5,"reason":"received"}"#, nil),
      (#"{"delta":0,"reason":"found"}"#, "invalidDelta"),
      (#"{"delta":1000001,"reason":"found"}"#, "invalidDelta"),
      (#"{"delta":-1000001,"reason":"lost"}"#, "invalidDelta"),
      (#"{"delta":-3,"reason":"stolen"}"#, "invalidReason"),
      (#"{"delta":-3}"#, "missingField"),
      (#"{"delta":"-3","reason":"lost"}"#, "wrongType"),
      (#"{"delta":-3,"reason":"lost","by":"me"}"#, "unknownField"),
    ] as [(String, String?)])
  func stockAdjustmentDecodesAndValidates(json: String, code: String?) {
    #expect(
      errorCode { () throws(DomainError) in
        try StockAdjustment.decodeStrict(from: data(json)).validate()
      } == code)
  }

  @Test(
    arguments: [
      (10, -3, 7, nil), (3, -3, 0, nil), (2, -3, 0, "countWouldGoNegative"), (0, 5, 5, nil),
      (999_999, 2, 0, "countTooLarge"),
    ] as [(Int, Int, Int, String?)])
  func anAdjustmentNeverTakesTheCountBelowZero(current: Int, delta: Int, expected: Int, code: String?) {
    var result = -1
    let adjustment = StockAdjustment(delta: delta, reason: .correction)
    #expect(errorCode { () throws(DomainError) in result = try adjustment.apply(to: current) } == code)
    if code == nil { #expect(result == expected) }
  }

  @Test(
    arguments: [
      (#"{"name":" Bio Vollmilch 3,8% 1 l ","price":{"minorUnits":129,"currency":"EUR"}}"#, nil),
      (
        #"{"name":"Club-Mate 0,5 l","price":{"minorUnits":119,"currency":"EUR"},"deposit":{"minorUnits":25,"currency":"EUR"},"unitPrice":{"amount":{"minorUnits":238,"currency":"EUR"},"per":"l"}}"#,
        nil
      ),
      (#"{"name":"Wasser","price":{"minorUnits":0,"currency":"EUR"},"deposit":null,"unitPrice":null}"#, nil),
      (#"{"name":"","price":{"minorUnits":129,"currency":"EUR"}}"#, "invalidName"),
      (#"{"name":"   ","price":{"minorUnits":129,"currency":"EUR"}}"#, "invalidName"),
      (#"{"name":"a\u0007b","price":{"minorUnits":129,"currency":"EUR"}}"#, "invalidName"),
      (#"{"name":"Milch","price":{"minorUnits":-1,"currency":"EUR"}}"#, "invalidPrice"),
      (#"{"name":"Milch","price":{"minorUnits":10000001,"currency":"EUR"}}"#, "invalidPrice"),
      (#"{"name":"Milch","price":{"minorUnits":1.5,"currency":"EUR"}}"#, "wrongType"),
      (#"{"name":"Milch","price":{"minorUnits":129,"currency":"USD"}}"#, "currencyMismatch"),
      (#"{"name":"Milch","price":{"minorUnits":129,"currency":"eur"}}"#, "invalidCurrency"),
      (
        #"{"name":"Milch","price":{"minorUnits":129,"currency":"EUR"},"deposit":{"minorUnits":-8,"currency":"EUR"}}"#,
        "invalidPrice"
      ),
      (
        #"{"name":"Milch","price":{"minorUnits":129,"currency":"EUR"},"unitPrice":{"amount":{"minorUnits":1,"currency":"EUR"},"per":"pound"}}"#,
        "invalidUnitPrice"
      ),
      (
        #"{"name":"Milch","price":{"minorUnits":129,"currency":"EUR"},"unitPrice":{"amount":{"minorUnits":-1,"currency":"EUR"},"per":"kg"}}"#,
        "invalidUnitPrice"
      ),
      (#"{"name":"Milch","price":129}"#, "wrongType"),
      (#"{"name":"Milch","price":{"minorUnits":129,"currency":"EUR"},"stock":3}"#, "unknownField"),
    ] as [(String, String?)])
  func productUpsertValidates(json: String, code: String?) {
    #expect(
      errorCode { () throws(DomainError) in
        try ProductUpsert.decodeStrict(from: data(json)).validate(sku: "p1", currency: "EUR")
      } == code)
  }

  @Test func productUpsertTrimsTheNameAndKeepsTheSKUFromThePath() throws {
    let body = ProductUpsert(name: "  Bananen 1 kg\n", price: eur(199))
    let product = try body.validate(sku: "p00042", currency: "EUR")
    #expect(product == Product(sku: "p00042", name: "Bananen 1 kg", price: eur(199)))
    #expect(
      errorCode { () throws(DomainError) in try body.validate(sku: "p/1", currency: "EUR") } == "invalidSKU")
    let long = ProductUpsert(name: String(repeating: "é", count: 201), price: eur(1))
    #expect(
      errorCode { () throws(DomainError) in try long.validate(sku: "p1", currency: "EUR") } == "invalidName")
  }

  @Test func productEncodesAbsentOptionalsAsNull() throws {
    let json = String(
      decoding: try JSON.encode(Product(sku: "p1", name: "Milch", price: eur(129))), as: UTF8.self)
    #expect(
      json
        == #"{"deposit":null,"name":"Milch","originalPrice":null,"price":{"currency":"EUR","minorUnits":129},"sku":"p1","unitPrice":null}"#
    )
    let round = try JSON.decode(Product.self, from: data(json))
    #expect(round == Product(sku: "p1", name: "Milch", price: eur(129)))
  }

  static let hubBody = #"""
    {"name":"Prenzlauer Berg","currency":"EUR",
     "hours":{"timeZone":"Europe/Berlin","weekly":[{"day":"mon","opens":"07:00","closes":"23:00"}]},
     "pricing":{"minimumOrder":{"minorUnits":1000,"currency":"EUR"},"deliveryFee":{"minorUnits":199,"currency":"EUR"},
                "freeDeliveryFrom":{"minorUnits":3500,"currency":"EUR"},
                "smallBasket":{"below":{"minorUnits":1500,"currency":"EUR"},"fee":{"minorUnits":150,"currency":"EUR"}}}}
    """#

  @Test(arguments: [
    ("", nil),
    ("Europe/Berlin|Mars/Olympus", "invalidHours"),
    (#""mon"|"monday""#, "invalidHours"),
    (#""07:00"|"7:00""#, "invalidHours"),
    (#""23:00"|"24:01""#, "invalidHours"),
    (#""closes":"23:00"|"closes":"07:00""#, "invalidHours"),
    (#""opens":"07:00"|"opens":"24:00""#, "invalidHours"),
    (#""minorUnits":199|"minorUnits":-199"#, "invalidPrice"),
    (#""minorUnits":3500,"currency":"EUR"|"minorUnits":3500,"currency":"CHF""#, "currencyMismatch"),
    (#""currency":"EUR",|"currency":"euro","#, "invalidCurrency"),
    (#""name":"Prenzlauer Berg"|"name":"""#, "invalidName"),
    (#""name":"Prenzlauer Berg"|"name":"P","manager":"x""#, "unknownField"),
    (#""below":{"minorUnits":1500|"below":{"minorUnits":0"#, "invalidPricing"),
  ])
  func hubUpsertValidates(replacement: String, code: String?) {
    var json = Self.hubBody
    if !replacement.isEmpty {
      let parts = replacement.split(separator: "|", omittingEmptySubsequences: false).map(String.init)
      json = json.replacingOccurrences(of: parts[0], with: parts[1])
      #expect(json != Self.hubBody)
    }
    #expect(
      errorCode { () throws(DomainError) in
        try HubUpsert.decodeStrict(from: data(json)).validate(hub: "h1", existing: nil)
      } == code)
  }

  @Test func hubUpsertDefaultsNameAndCurrencyAndKeepsTheCurrencyOfAnExistingHub() throws {
    let pricing = PricingSettings(minimumOrder: eur(1000), deliveryFee: eur(199))
    let hours = OpeningHours.daily(opens: LocalTime("07:00")!, closes: LocalTime("23:00")!)
    let created = try HubUpsert(hours: hours, pricing: pricing).validate(hub: "h9", existing: nil)
    #expect(created == Hub(id: "h9", name: "h9", hours: hours, pricing: pricing, currency: "EUR"))
    let renamed = try HubUpsert(name: "Mitte", hours: hours, pricing: pricing).validate(
      hub: "h9", existing: created)
    #expect(renamed.name == "Mitte")
    let kept = try HubUpsert(hours: hours, pricing: pricing).validate(hub: "h9", existing: renamed)
    #expect(kept.name == "Mitte")
    let chf = Money(minorUnits: 1000, currency: "CHF")
    let swiss = HubUpsert(
      hours: hours, pricing: PricingSettings(minimumOrder: chf, deliveryFee: chf), currency: "CHF")
    #expect(
      throws: DomainError.currencyMismatch(field: "currency", expected: "EUR", got: "CHF"),
      performing: { try swiss.validate(hub: "h9", existing: created) })
    #expect(
      errorCode { () throws(DomainError) in try swiss.validate(hub: "h/9", existing: nil) } == "invalidHubID")
  }

  @Test func pricingWritesAbsentThresholdsAsNull() throws {
    let pricing = PricingSettings(minimumOrder: eur(1000), deliveryFee: eur(199))
    let json = String(decoding: try JSON.encode(pricing), as: UTF8.self)
    #expect(json.contains(#""freeDeliveryFrom":null"#))
    #expect(json.contains(#""smallBasket":null"#))
    #expect(try JSON.decode(PricingSettings.self, from: data(json)) == pricing)
    #expect(
      try JSON.decode(
        PricingSettings.self,
        from: data(
          #"{"minimumOrder":{"minorUnits":1000,"currency":"EUR"},"deliveryFee":{"minorUnits":199,"currency":"EUR"}}"#
        )
      ) == pricing)
  }

  @Test func everyErrorHasAStableCodeAndAKind() {
    #expect(DomainError.missingIds.kind == .malformed)
    #expect(DomainError.invalidCount(-1).kind == .invalid)
    #expect(DomainError.reservationConflict(orderId: "o1").kind == .conflict)
    #expect(DomainError.countWouldGoNegative(current: 2, delta: -3).detail.contains("2"))
    #expect(DomainError.invalidReason("x").detail.contains("received"))
  }
}
