import CartService
import Foundation
import GrocerContracts
import GrocerCore
import Testing

/// Promo codes: how a code is normalized, which staff definitions are accepted, and how a body
/// is read.
@Suite struct PromotionTests {
  static func eur(_ units: Int) -> Money { Money(minorUnits: units, currency: "EUR") }

  // MARK: normalize

  @Test(
    arguments: [
      ("SPRING", "SPRING"), ("spring", "SPRING"), ("  Spring  ", "SPRING"), ("\tspring ", "SPRING"),
      ("spring-10_off", "SPRING-10_OFF"), ("a", "A"), ("7", "7"),
      (String(repeating: "x", count: 32), String(repeating: "X", count: 32)),
      (" " + String(repeating: "x", count: 32) + " ", String(repeating: "X", count: 32)),
    ])
  func aCodeIsTrimmedAndUpperCased(raw: String, normalized: String) {
    #expect(Promotion.normalize(raw) == normalized)
  }

  @Test(
    arguments: [
      "", " ", "   ", String(repeating: "x", count: 33), "SPRING 10", "SPRING!", "SPRÍNG", "spring.10",
      "spring/10",
      "ÉTÉ", "spring\n", "ＳＰＲＩＮＧ", "10%", "\u{0}", "🎉", "prıme", "ﬁve", "straße",
    ])
  func aCodeThatIsEmptyTooLongOrHasOtherCharactersIsRefused(raw: String) {
    #expect(Promotion.normalize(raw) == nil)
  }

  // MARK: PromotionUpsert.validate

  @Test func aPercentOffDefinitionBecomesAPromotion() throws {
    let body = PromotionUpsert(
      kind: "percentOff", percent: 10, minimumSubtotal: Self.eur(2000), hubs: ["h2", "h1", "h2"],
      validUntil: Date(timeIntervalSince1970: 1_800_000_000), description: "  Spring sale  ")
    let promo = try body.validate(code: "SPRING")
    #expect(
      promo
        == Promotion(
          code: "SPRING", kind: .percentOff, percent: 10, minimumSubtotal: Self.eur(2000),
          hubs: ["h1", "h2"],
          validUntil: Date(timeIntervalSince1970: 1_800_000_000), description: "Spring sale"))
  }

  @Test func anAmountOffDefinitionWithoutADescriptionIsDescribedForTheCustomer() throws {
    let promo = try PromotionUpsert(kind: "amountOff", amount: Self.eur(500)).validate(code: "FIVE")
    #expect(promo.kind == .amountOff)
    #expect(promo.amount == Self.eur(500))
    #expect(promo.percent == nil)
    #expect(promo.hubs == nil)
    #expect(promo.description == "5.00 EUR off your items")
  }

  static let accepted: [PromotionUpsert] = [
    PromotionUpsert(kind: "percentOff", percent: 1),
    PromotionUpsert(kind: "percentOff", percent: 100),
    PromotionUpsert(kind: "percentOff", percent: 15, minimumSubtotal: Money(minorUnits: 1, currency: "USD")),
    PromotionUpsert(kind: "percentOff", percent: 15, minimumSubtotal: eur(0)),
    PromotionUpsert(kind: "amountOff", amount: eur(1)),
    PromotionUpsert(kind: "amountOff", amount: eur(10_000_000)),
    PromotionUpsert(kind: "amountOff", amount: eur(500), minimumSubtotal: eur(2000)),
    PromotionUpsert(kind: "amountOff", amount: eur(500), hubs: ["h1"]),
    PromotionUpsert(kind: "amountOff", amount: eur(500), hubs: (1...100).map { "h\($0)" }),
    PromotionUpsert(
      kind: "amountOff", amount: eur(500), hubs: [String(repeating: "h", count: 64), "hub_2.a-b"]),
    PromotionUpsert(kind: "percentOff", percent: 5, description: "x"),
    PromotionUpsert(kind: "percentOff", percent: 5, description: String(repeating: "é", count: 200)),
    PromotionUpsert(kind: "percentOff", percent: 5, validUntil: Date(timeIntervalSince1970: 0)),
  ]

  @Test(arguments: accepted)
  func aValidDefinitionIsAccepted(body: PromotionUpsert) throws {
    let promo = try body.validate(code: "CODE")
    #expect(promo.code == "CODE")
    #expect(promo.kind.rawValue == body.kind)
    #expect(promo.percent == body.percent)
    #expect(promo.amount == body.amount)
    #expect(promo.minimumSubtotal == body.minimumSubtotal)
    #expect(promo.validUntil == body.validUntil)
  }

  /// (body, words the refusal must name); every one is `invalidPromotion` (422).
  static let refused: [(PromotionUpsert, String)] = [
    (PromotionUpsert(kind: "fixed", amount: eur(500)), "`kind`"),
    (PromotionUpsert(kind: "PercentOff", percent: 10), "`kind`"),
    (PromotionUpsert(kind: "", percent: 10), "`kind`"),
    (PromotionUpsert(kind: "percentOff", percent: 0), "`percent`"),
    (PromotionUpsert(kind: "percentOff", percent: 101), "`percent`"),
    (PromotionUpsert(kind: "percentOff", percent: -5), "`percent`"),
    (PromotionUpsert(kind: "percentOff"), "`percent`"),
    (PromotionUpsert(kind: "percentOff", percent: 10, amount: eur(500)), "`amount`"),
    (PromotionUpsert(kind: "amountOff"), "`amount`"),
    (PromotionUpsert(kind: "amountOff", amount: eur(0)), "`amount.minorUnits`"),
    (PromotionUpsert(kind: "amountOff", amount: eur(-100)), "`amount.minorUnits`"),
    (PromotionUpsert(kind: "amountOff", amount: eur(10_000_001)), "`amount.minorUnits`"),
    (
      PromotionUpsert(kind: "amountOff", amount: Money(minorUnits: 500, currency: "eur")), "`amount.currency`"
    ),
    (PromotionUpsert(kind: "amountOff", percent: 10, amount: eur(500)), "`percent`"),
    (
      PromotionUpsert(
        kind: "amountOff", amount: eur(500), minimumSubtotal: Money(minorUnits: 2000, currency: "USD")),
      "one currency"
    ),
    (
      PromotionUpsert(kind: "percentOff", percent: 10, minimumSubtotal: eur(-1)),
      "`minimumSubtotal.minorUnits`"
    ),
    (
      PromotionUpsert(
        kind: "percentOff", percent: 10, minimumSubtotal: Money(minorUnits: 1, currency: "EURO")),
      "`minimumSubtotal.currency`"
    ),
    (PromotionUpsert(kind: "amountOff", amount: eur(500), hubs: []), "`hubs`"),
    (PromotionUpsert(kind: "amountOff", amount: eur(500), hubs: (1...101).map { "h\($0)" }), "`hubs`"),
    (PromotionUpsert(kind: "amountOff", amount: eur(500), hubs: ["h1", "h 2"]), "`hubs`"),
    (PromotionUpsert(kind: "amountOff", amount: eur(500), hubs: [""]), "`hubs`"),
    (PromotionUpsert(kind: "amountOff", amount: eur(500), hubs: ["h/1"]), "`hubs`"),
    (
      PromotionUpsert(kind: "amountOff", amount: eur(500), hubs: [String(repeating: "h", count: 65)]),
      "`hubs`"
    ),
    (PromotionUpsert(kind: "percentOff", percent: 10, description: ""), "`description`"),
    (PromotionUpsert(kind: "percentOff", percent: 10, description: "  \n "), "`description`"),
    (
      PromotionUpsert(kind: "percentOff", percent: 10, description: String(repeating: "x", count: 201)),
      "`description`"
    ),
  ]

  @Test(arguments: refused)
  func anInvalidDefinitionIsRefusedNamingTheField(body: PromotionUpsert, naming: String) {
    #expect {
      _ = try body.validate(code: "CODE")
    } throws: { error in
      guard let error = error as? CartError, case .invalidPromotion = error else { return false }
      return error.code == "invalidPromotion" && error.kind == .invalid && error.detail.contains(naming)
    }
  }

  // MARK: Decoding a body

  @Test func aBodyIsDecodedWithEveryField() throws {
    let json = """
      { "kind": "amountOff", "amount": { "minorUnits": 500, "currency": "EUR" },
        "minimumSubtotal": { "minorUnits": 2000, "currency": "EUR" }, "hubs": ["h1"],
        "validUntil": "2026-12-31T23:00:00Z", "description": "Five off" }
      """
    let body = try PromotionUpsert.decodeCartBody(from: Data(json.utf8))
    #expect(
      body
        == PromotionUpsert(
          kind: "amountOff", amount: Self.eur(500), minimumSubtotal: Self.eur(2000), hubs: ["h1"],
          validUntil: Timestamp.date(from: "2026-12-31T23:00:00Z"), description: "Five off"))
  }

  /// (body, the error it must give).
  static let badBodies: [(String, CartError)] = [
    (#"{ "kind": "percentOff", "percent": 10, "code": "X" }"#, .unknownField("code")),
    (#"{ "kind": "percentOff", "percent": 10, "Percent": 10 }"#, .unknownField("Percent")),
    (#"{ "kind": "percentOff", "percent": "10" }"#, .wrongType(field: "percent", expected: "an integer")),
    (#"{ "kind": "percentOff", "percent": 2.5 }"#, .wrongType(field: "percent", expected: "an integer")),
    (#"{ "kind": 1, "percent": 10 }"#, .wrongType(field: "kind", expected: "a string")),
    (#"{ "percent": 10 }"#, .missingField("kind")),
    (
      #"{ "kind": "percentOff", "hubs": "h1", "percent": 10 }"#,
      .wrongType(field: "hubs", expected: "an array")
    ),
    (#"[1, 2]"#, .wrongType(field: "body", expected: "a JSON object")),
  ]

  @Test(arguments: badBodies)
  func aBodyIsReadStrictly(json: String, expected: CartError) {
    #expect(throws: expected) { _ = try PromotionUpsert.decodeCartBody(from: Data(json.utf8)) }
    #expect(expected.kind == .malformed)
  }

  @Test(arguments: [
    #"{ "kind": "percentOff", "#, "", "percentOff", #"{ "kind": "percentOff", "percent": 10 } x"#,
  ])
  func aBodyThatIsNotJSONIsMalformed(json: String) {
    #expect {
      _ = try PromotionUpsert.decodeCartBody(from: Data(json.utf8))
    } throws: { error in
      (error as? CartError)?.code == "malformedJSON"
    }
  }
}
