import Foundation
import GrocerContracts
import GrocerCore

/// A promo code staff defined: a percentage or a fixed amount off the items, optionally only
/// from a minimum subtotal, at some hubs, or until a moment.
///
/// Stored and returned as `{ "code", "kind": "percentOff" | "amountOff", "percent"?, "amount"?,
/// "minimumSubtotal"?, "hubs"?, "validUntil"?, "description" }`.
public struct Promotion: Codable, Hashable, Sendable {
  public enum Kind: String, Codable, Hashable, Sendable, CaseIterable {
    case percentOff, amountOff
  }

  public var code: String
  public var kind: Kind
  /// 1…100, for `percentOff`.
  public var percent: Int?
  /// For `amountOff`.
  public var amount: Money?
  public var minimumSubtotal: Money?
  /// The hubs where it is valid; nil for every hub.
  public var hubs: [HubID]?
  public var validUntil: Date?
  public var description: String

  public init(
    code: String, kind: Kind, percent: Int? = nil, amount: Money? = nil, minimumSubtotal: Money? = nil,
    hubs: [HubID]? = nil, validUntil: Date? = nil, description: String? = nil
  ) {
    self.code = code
    self.kind = kind
    self.percent = percent
    self.amount = amount
    self.minimumSubtotal = minimumSubtotal
    self.hubs = hubs
    self.validUntil = validUntil
    self.description = description ?? Self.describe(kind: kind, percent: percent, amount: amount)
  }

  /// The form a code is stored and compared in: spaces trimmed, upper case. Nil unless it is
  /// 1–32 of ASCII `A-Z a-z 0-9 - _` after trimming.
  ///
  /// The characters are checked before upper-casing: Unicode upper-casing would turn `prıme`
  /// (dotless ı), `ﬁve` or `straße` into the ASCII codes `PRIME`, `FIVE`, `STRASSE`.
  public static func normalize(_ code: String) -> String? {
    let trimmed = code.trimmingCharacters(in: .whitespaces)
    guard (1...32).contains(trimmed.utf8.count),
      trimmed.utf8.allSatisfy({
        ($0 >= UInt8(ascii: "A") && $0 <= UInt8(ascii: "Z"))
          || ($0 >= UInt8(ascii: "a") && $0 <= UInt8(ascii: "z"))
          || ($0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9"))
          || $0 == UInt8(ascii: "-") || $0 == UInt8(ascii: "_")
      })
    else { return nil }
    return trimmed.uppercased()
  }

  /// Whether it has run out at `now` (such a code is removed from carts with `promoRemoved`).
  public func hasExpired(at now: Date) -> Bool {
    validUntil.map { $0 <= now } ?? false
  }

  /// Whether it may be used at `hub` at all.
  public func isValid(at hub: HubID) -> Bool {
    hubs.map { $0.contains(hub) } ?? true
  }

  /// What it takes off a cart whose items come to `subtotal` at `hub`: the discount, or why
  /// none (the code stays on the cart with that notice).
  public func evaluate(subtotal: Money, hub: HubID, now: Date) -> Evaluation {
    if hasExpired(at: now) { return .notApplied(notice: "This code has expired.") }
    guard isValid(at: hub) else { return .notApplied(notice: "This code is not valid at this hub.") }
    if let minimumSubtotal {
      guard minimumSubtotal.currency == subtotal.currency else {
        return .notApplied(notice: "This code is not valid in \(subtotal.currency).")
      }
      if subtotal.minorUnits < minimumSubtotal.minorUnits {
        let missing = Money(
          minorUnits: minimumSubtotal.minorUnits - subtotal.minorUnits, currency: subtotal.currency)
        return .notApplied(notice: "Add \(Self.format(missing)) more to use this code.")
      }
    }
    switch kind {
    case .percentOff:
      let percent = min(max(self.percent ?? 0, 0), 100)
      // Half away from zero; subtotals are never negative.
      let off = (subtotal.minorUnits * percent + 50) / 100
      return .discount(Money(minorUnits: min(off, subtotal.minorUnits), currency: subtotal.currency))
    case .amountOff:
      guard let amount, amount.currency == subtotal.currency else {
        return .notApplied(notice: "This code is not valid in \(subtotal.currency).")
      }
      return .discount(
        Money(minorUnits: min(amount.minorUnits, subtotal.minorUnits), currency: subtotal.currency))
    }
  }

  /// The outcome of `evaluate`.
  public enum Evaluation: Hashable, Sendable {
    case discount(Money)
    case notApplied(notice: String)
  }

  static func describe(kind: Kind, percent: Int?, amount: Money?) -> String {
    switch kind {
    case .percentOff: "\(percent ?? 0)% off your items"
    case .amountOff: "\(amount.map(format) ?? "0") off your items"
    }
  }

  /// `1234 EUR` → `12.34 EUR` (every currency we price in has two decimals).
  static func format(_ money: Money) -> String {
    let units = money.minorUnits
    let cents = abs(units) % 100
    return "\(units < 0 ? "-" : "")\(abs(units) / 100).\(cents < 10 ? "0" : "")\(cents) \(money.currency)"
  }
}

/// Body of staff `PUT /v1/promos/{code}`.
public struct PromotionUpsert: StrictBody, Hashable {
  public static let allowedKeys: Set<String> = [
    "kind", "percent", "amount", "minimumSubtotal", "hubs", "validUntil", "description",
  ]

  public var kind: String
  public var percent: Int?
  public var amount: Money?
  public var minimumSubtotal: Money?
  public var hubs: [String]?
  public var validUntil: Date?
  public var description: String?

  public init(
    kind: String, percent: Int? = nil, amount: Money? = nil, minimumSubtotal: Money? = nil,
    hubs: [String]? = nil,
    validUntil: Date? = nil, description: String? = nil
  ) {
    self.kind = kind
    self.percent = percent
    self.amount = amount
    self.minimumSubtotal = minimumSubtotal
    self.hubs = hubs
    self.validUntil = validUntil
    self.description = description
  }

  /// Largest amount anywhere (100,000.00), as StockService allows for prices.
  static let maximumMinorUnits = 10_000_000

  /// The promotion this body defines for `code` (already normalized), or why not.
  public func validate(code: String) throws(CartError) -> Promotion {
    guard let kind = Promotion.Kind(rawValue: kind) else {
      throw .invalidPromotion("`kind` must be percentOff or amountOff")
    }
    switch kind {
    case .percentOff:
      guard let percent, (1...100).contains(percent) else {
        throw .invalidPromotion("`percent` must be a whole number from 1 to 100 for percentOff")
      }
      guard amount == nil else { throw .invalidPromotion("`amount` is only for amountOff") }
    case .amountOff:
      guard let amount else { throw .invalidPromotion("`amount` is required for amountOff") }
      try Self.validate(amount, field: "amount", positive: true)
      guard percent == nil else { throw .invalidPromotion("`percent` is only for percentOff") }
    }
    if let minimumSubtotal { try Self.validate(minimumSubtotal, field: "minimumSubtotal", positive: false) }
    if let amount, let minimumSubtotal, amount.currency != minimumSubtotal.currency {
      throw .invalidPromotion("`amount` and `minimumSubtotal` must be in one currency")
    }
    if let hubs {
      guard !hubs.isEmpty, hubs.count <= 100 else {
        throw .invalidPromotion("`hubs` must name 1 to 100 hubs")
      }
      for hub in hubs where !Identifier.isValid(hub) {
        throw .invalidPromotion("`hubs` contains `\(CartError.clip(hub))`, which is not a hub id")
      }
    }
    if let description {
      let trimmed = description.trimmingCharacters(in: .whitespacesAndNewlines)
      guard (1...200).contains(trimmed.count) else {
        throw .invalidPromotion("`description` must be 1 to 200 characters")
      }
    }
    return Promotion(
      code: code, kind: kind, percent: percent, amount: amount, minimumSubtotal: minimumSubtotal,
      hubs: hubs.map { Array(Set($0)).sorted() }, validUntil: validUntil,
      description: description?.trimmingCharacters(in: .whitespacesAndNewlines))
  }

  static func validate(_ money: Money, field: String, positive: Bool) throws(CartError) {
    guard money.hasValidCurrency else {
      throw .invalidPromotion("`\(field).currency` must be an ISO 4217 code")
    }
    guard money.minorUnits >= (positive ? 1 : 0), money.minorUnits <= maximumMinorUnits else {
      throw .invalidPromotion(
        "`\(field).minorUnits` must be from \(positive ? 1 : 0) to \(maximumMinorUnits)")
    }
  }
}

extension Promotion {
  /// The demo promo codes `cart-service load-demo` defines (for the demo hubs h1–h3).
  public static let demo: [Promotion] = [
    Promotion(code: "SPRING", kind: .percentOff, percent: 10, description: "10 % off your groceries"),
    Promotion(
      code: "WELCOME5", kind: .amountOff, amount: Money(minorUnits: 500),
      minimumSubtotal: Money(minorUnits: 2000),
      description: "5 € off from 20 €"),
    Promotion(
      code: "H1ONLY", kind: .percentOff, percent: 15, hubs: ["h1"], description: "15 % off in Prenzlauer Berg"
    ),
  ]
}
