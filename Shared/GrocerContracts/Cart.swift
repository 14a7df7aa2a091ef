import Foundation
import GrocerCore

/// The whole priced cart, exactly as every CartService reply carries it (SPEC.md, CartService),
/// and as OrderService receives it over request/reply and returns it in a 409:
///
/// ```
/// { "hub", "version",
///   "lines": [ { "sku", "name", "quantity", "unitPrice", "deposit", "lineTotal" } ],
///   "adjustments": [ { "sku", "kind", "to"?, "from"?, "code"?, "version" } ],
///   "promo": { "code", "description", "applied", "notice" } | null,
///   "totals": { "subtotal", "deposit", "deliveryFee", "smallBasketFee", "fees", "discount", "total" },
///   "blocker": null | { "kind": "belowMinimum", "missing" } | { "kind": "hubClosed", "opensAt" } }
/// ```
public struct CartView: Codable, Hashable, Sendable {
  public var hub: HubID
  public var version: Int64
  public var lines: [CartLineView]
  public var adjustments: [CartAdjustment]
  public var promo: CartPromoView?
  public var totals: CartTotals
  public var blocker: CartBlocker?

  public init(
    hub: HubID, version: Int64, lines: [CartLineView], adjustments: [CartAdjustment], promo: CartPromoView?,
    totals: CartTotals, blocker: CartBlocker?
  ) {
    self.hub = hub
    self.version = version
    self.lines = lines
    self.adjustments = adjustments
    self.promo = promo
    self.totals = totals
    self.blocker = blocker
  }

  public func encode(to encoder: any Encoder) throws {
    var container = encoder.container(keyedBy: CodingKeys.self)
    try container.encode(hub, forKey: .hub)
    try container.encode(version, forKey: .version)
    try container.encode(lines, forKey: .lines)
    try container.encode(adjustments, forKey: .adjustments)
    try container.encode(promo, forKey: .promo)
    try container.encode(totals, forKey: .totals)
    try container.encode(blocker, forKey: .blocker)
  }
}

/// One line: `{ "sku", "name", "quantity", "unitPrice", "deposit": Money, "lineTotal" }`;
/// `lineTotal` is unit price × quantity (the deposit is summed apart). The deposit is always
/// Money on the wire, zero when the product has none (the app's model types it so); `deposit`
/// here is nil then.
public struct CartLineView: Codable, Hashable, Sendable {
  public var sku: SKU
  public var name: String
  public var quantity: Int
  public var unitPrice: Money
  public var deposit: Money?
  public var lineTotal: Money

  public init(sku: SKU, name: String, quantity: Int, unitPrice: Money, deposit: Money?, lineTotal: Money) {
    self.sku = sku
    self.name = name
    self.quantity = quantity
    self.unitPrice = unitPrice
    self.deposit = deposit
    self.lineTotal = lineTotal
  }

  private enum CodingKeys: String, CodingKey { case sku, name, quantity, unitPrice, deposit, lineTotal }

  public func encode(to encoder: any Encoder) throws {
    var container = encoder.container(keyedBy: CodingKeys.self)
    try container.encode(sku, forKey: .sku)
    try container.encode(name, forKey: .name)
    try container.encode(quantity, forKey: .quantity)
    try container.encode(unitPrice, forKey: .unitPrice)
    try container.encode(deposit ?? .zero(unitPrice.currency), forKey: .deposit)
    try container.encode(lineTotal, forKey: .lineTotal)
  }

  public init(from decoder: any Decoder) throws {
    let container = try decoder.container(keyedBy: CodingKeys.self)
    sku = try container.decode(SKU.self, forKey: .sku)
    name = try container.decode(String.self, forKey: .name)
    quantity = try container.decode(Int.self, forKey: .quantity)
    unitPrice = try container.decode(Money.self, forKey: .unitPrice)
    deposit = Self.deposit(try container.decodeIfPresent(Money.self, forKey: .deposit))
    lineTotal = try container.decode(Money.self, forKey: .lineTotal)
  }

  /// A zero deposit read from the wire is no deposit.
  static func deposit(_ read: Money?) -> Money? { read.flatMap { $0.minorUnits == 0 ? nil : $0 } }
}

/// A change the server made to a cart on its own, tagged with the cart version that introduced
/// it:
/// `{ "sku", "kind": "outOfStock", "version" }`, `{ "sku", "kind": "reduced", "to": 2, "version" }`,
/// `{ "sku", "kind": "priceChanged", "from": Money, "to": Money, "version" }`,
/// `{ "kind": "promoRemoved", "code": "SPRING", "version" }`.
public struct CartAdjustment: Codable, Hashable, Sendable {
  public enum Change: Hashable, Sendable {
    case outOfStock(sku: SKU)
    case reduced(sku: SKU, to: Int)
    case priceChanged(sku: SKU, from: Money, to: Money)
    case promoRemoved(code: String)
  }

  public var change: Change
  public var version: Int64

  public init(_ change: Change, version: Int64) {
    self.change = change
    self.version = version
  }

  /// The SKU the change is about (nil for `promoRemoved`).
  public var sku: SKU? {
    switch change {
    case .outOfStock(let sku), .reduced(let sku, _), .priceChanged(let sku, _, _): sku
    case .promoRemoved: nil
    }
  }

  public var kind: String {
    switch change {
    case .outOfStock: "outOfStock"
    case .reduced: "reduced"
    case .priceChanged: "priceChanged"
    case .promoRemoved: "promoRemoved"
    }
  }

  enum CodingKeys: String, CodingKey { case sku, kind, to, from, code, version }

  public init(from decoder: any Decoder) throws {
    let container = try decoder.container(keyedBy: CodingKeys.self)
    version = try container.decode(Int64.self, forKey: .version)
    let kind = try container.decode(String.self, forKey: .kind)
    switch kind {
    case "outOfStock": change = .outOfStock(sku: try container.decode(SKU.self, forKey: .sku))
    case "reduced":
      change = .reduced(
        sku: try container.decode(SKU.self, forKey: .sku), to: try container.decode(Int.self, forKey: .to))
    case "priceChanged":
      change = .priceChanged(
        sku: try container.decode(SKU.self, forKey: .sku),
        from: try container.decode(Money.self, forKey: .from),
        to: try container.decode(Money.self, forKey: .to))
    case "promoRemoved": change = .promoRemoved(code: try container.decode(String.self, forKey: .code))
    default:
      throw DecodingError.dataCorruptedError(
        forKey: .kind, in: container, debugDescription: "unknown adjustment kind \(kind)")
    }
  }

  public func encode(to encoder: any Encoder) throws {
    var container = encoder.container(keyedBy: CodingKeys.self)
    switch change {
    case .outOfStock(let sku):
      try container.encode(sku, forKey: .sku)
    case .reduced(let sku, let to):
      try container.encode(sku, forKey: .sku)
      try container.encode(to, forKey: .to)
    case .priceChanged(let sku, let from, let to):
      try container.encode(sku, forKey: .sku)
      try container.encode(from, forKey: .from)
      try container.encode(to, forKey: .to)
    case .promoRemoved(let code):
      try container.encode(code, forKey: .code)
    }
    try container.encode(kind, forKey: .kind)
    try container.encode(version, forKey: .version)
  }
}

/// The cart's promo code: `{ "code", "description", "applied", "notice": String | null }`.
/// `applied` is false (and `notice` says why) while its condition does not hold.
public struct CartPromoView: Codable, Hashable, Sendable {
  public var code: String
  public var description: String
  public var applied: Bool
  public var notice: String?

  public init(code: String, description: String, applied: Bool, notice: String?) {
    self.code = code
    self.description = description
    self.applied = applied
    self.notice = notice
  }

  public func encode(to encoder: any Encoder) throws {
    var container = encoder.container(keyedBy: CodingKeys.self)
    try container.encode(code, forKey: .code)
    try container.encode(description, forKey: .description)
    try container.encode(applied, forKey: .applied)
    try container.encode(notice, forKey: .notice)
  }
}

/// `{ "subtotal", "deposit", "deliveryFee", "smallBasketFee", "fees", "discount", "total" }`, where
/// fees = deliveryFee + smallBasketFee (the app's model reads `fees`; the itemised ones are for
/// showing them apart) and total = subtotal − discount + deposit + fees.
public struct CartTotals: Codable, Hashable, Sendable {
  public var subtotal: Money
  public var deposit: Money
  public var deliveryFee: Money
  public var smallBasketFee: Money
  public var discount: Money
  public var total: Money

  public init(
    subtotal: Money, deposit: Money, deliveryFee: Money, smallBasketFee: Money, discount: Money, total: Money
  ) {
    self.subtotal = subtotal
    self.deposit = deposit
    self.deliveryFee = deliveryFee
    self.smallBasketFee = smallBasketFee
    self.discount = discount
    self.total = total
  }

  public static func zero(_ currency: String) -> CartTotals {
    let zero = Money.zero(currency)
    return CartTotals(
      subtotal: zero, deposit: zero, deliveryFee: zero, smallBasketFee: zero, discount: zero, total: zero)
  }

  /// The delivery fee and the small-basket fee together.
  public var fees: Money {
    Money(minorUnits: deliveryFee.minorUnits + smallBasketFee.minorUnits, currency: deliveryFee.currency)
  }

  private enum CodingKeys: String, CodingKey {
    case subtotal, deposit, deliveryFee, smallBasketFee, fees, discount, total
  }

  public init(from decoder: any Decoder) throws {
    let container = try decoder.container(keyedBy: CodingKeys.self)
    self.init(
      subtotal: try container.decode(Money.self, forKey: .subtotal),
      deposit: try container.decode(Money.self, forKey: .deposit),
      deliveryFee: try container.decode(Money.self, forKey: .deliveryFee),
      smallBasketFee: try container.decode(Money.self, forKey: .smallBasketFee),
      discount: try container.decode(Money.self, forKey: .discount),
      total: try container.decode(Money.self, forKey: .total))
  }

  public func encode(to encoder: any Encoder) throws {
    var container = encoder.container(keyedBy: CodingKeys.self)
    try container.encode(subtotal, forKey: .subtotal)
    try container.encode(deposit, forKey: .deposit)
    try container.encode(deliveryFee, forKey: .deliveryFee)
    try container.encode(smallBasketFee, forKey: .smallBasketFee)
    try container.encode(fees, forKey: .fees)
    try container.encode(discount, forKey: .discount)
    try container.encode(total, forKey: .total)
  }
}

/// Why checkout is blocked: `{ "kind": "belowMinimum", "missing": Money }` or
/// `{ "kind": "hubClosed", "opensAt": time | null }`.
public enum CartBlocker: Codable, Hashable, Sendable {
  case belowMinimum(missing: Money)
  case hubClosed(opensAt: Date?)

  enum CodingKeys: String, CodingKey { case kind, missing, opensAt }

  public var kind: String {
    switch self {
    case .belowMinimum: "belowMinimum"
    case .hubClosed: "hubClosed"
    }
  }

  public init(from decoder: any Decoder) throws {
    let container = try decoder.container(keyedBy: CodingKeys.self)
    switch try container.decode(String.self, forKey: .kind) {
    case "belowMinimum": self = .belowMinimum(missing: try container.decode(Money.self, forKey: .missing))
    case "hubClosed": self = .hubClosed(opensAt: try container.decodeIfPresent(Date.self, forKey: .opensAt))
    case let kind:
      throw DecodingError.dataCorruptedError(
        forKey: .kind, in: container, debugDescription: "unknown blocker kind \(kind)")
    }
  }

  public func encode(to encoder: any Encoder) throws {
    var container = encoder.container(keyedBy: CodingKeys.self)
    try container.encode(kind, forKey: .kind)
    switch self {
    case .belowMinimum(let missing): try container.encode(missing, forKey: .missing)
    case .hubClosed(let opensAt): try container.encode(opensAt, forKey: .opensAt)
    }
  }
}

/// Request/reply on the queue `cart.checkout`: what OrderService asks CartService at checkout.
public enum CartCheckoutQueue {
  public static let name = "cart.checkout"
}

/// `{ "kind": "price", "userId", "hub", "cartVersion"? }` → the priced cart and whether it is
/// still `cartVersion`; `{ "kind": "applyCounts", "userId", "hub", "counts": [ { "sku",
/// "available" } ] }` → after a reservation shortfall, clamps that cart to the counts StockService
/// answered (with `reduced`/`outOfStock` adjustments and a new version) and returns it.
public struct CartCheckoutRequest: Codable, Hashable, Sendable {
  public enum Kind: String, Codable, Hashable, Sendable {
    case price, applyCounts
  }

  /// One count StockService reported.
  public struct Count: Codable, Hashable, Sendable {
    public var sku: SKU
    public var available: Int

    public init(sku: SKU, available: Int) {
      self.sku = sku
      self.available = available
    }
  }

  public var kind: Kind
  public var userId: String
  public var hub: HubID
  public var cartVersion: Int64?
  public var counts: [Count]?
  public var correlationId: String?

  public init(
    kind: Kind, userId: String, hub: HubID, cartVersion: Int64? = nil, counts: [Count]? = nil,
    correlationId: String? = nil
  ) {
    self.kind = kind
    self.userId = userId
    self.hub = hub
    self.cartVersion = cartVersion
    self.counts = counts
    self.correlationId = correlationId
  }
}

/// `{ "cart": CartView, "matches": Bool }`, `matches` telling whether `cart.version` is the
/// `cartVersion` asked about; or `{ "error": { "code", "detail" } }` (`unknownHub`, `badRequest`).
public struct CartCheckoutReply: Codable, Hashable, Sendable {
  public var cart: CartView?
  public var matches: Bool
  public var error: RemoteError?

  public init(cart: CartView?, matches: Bool, error: RemoteError? = nil) {
    self.cart = cart
    self.matches = matches
    self.error = error
  }
}

/// Event types CartService publishes.
public enum CartEventType {
  /// Every new version of a cart: `CartChanged`, subject `cart/<user>/<hub>`, sequence the version.
  public static let cartChanged = "cart.changed"
  public static let source = "cart-service"
}

/// Payload of `cart.changed`: who, where, the new version, the lines and why it changed
/// (`customer`, `promo`, `stock`, `price`, `hub`, `orderConfirmed`, `shortfall`).
public struct CartChanged: Codable, Hashable, Sendable {
  public struct Line: Codable, Hashable, Sendable {
    public var sku: SKU
    public var quantity: Int

    public init(sku: SKU, quantity: Int) {
      self.sku = sku
      self.quantity = quantity
    }
  }

  public var userId: String
  public var hub: HubID
  public var version: Int64
  public var lines: [Line]
  public var promo: String?
  public var reason: String

  public init(userId: String, hub: HubID, version: Int64, lines: [Line], promo: String?, reason: String) {
    self.userId = userId
    self.hub = hub
    self.version = version
    self.lines = lines
    self.promo = promo
    self.reason = reason
  }

  public static func subject(userId: String, hub: HubID) -> String {
    EventSubject.cart(userId: userId, hub: hub)
  }
}

extension CartView {
  /// The reply's JSON, written by hand: the same bytes as `JSON.encode(self)` (every cart reply
  /// writes one; Benchmarks/codecs).
  public func jsonBytes() -> [UInt8] {
    var out = JSONBytes(capacity: 256 + lines.count * 200 + adjustments.count * 80)
    out.beginObject()
    out.key("adjustments")
    out.beginArray()
    for adjustment in adjustments {
      out.beginObject()
      switch adjustment.change {
      case .outOfStock(let sku):
        out.key("kind")
        out.string(adjustment.kind)
        out.key("sku")
        out.string(sku)
      case .reduced(let sku, let to):
        out.key("kind")
        out.string(adjustment.kind)
        out.key("sku")
        out.string(sku)
        out.key("to")
        out.int(to)
      case .priceChanged(let sku, let from, let to):
        out.key("from")
        out.money(from)
        out.key("kind")
        out.string(adjustment.kind)
        out.key("sku")
        out.string(sku)
        out.key("to")
        out.money(to)
      case .promoRemoved(let code):
        out.key("code")
        out.string(code)
        out.key("kind")
        out.string(adjustment.kind)
      }
      out.key("version")
      out.int(adjustment.version)
      out.endObject()
    }
    out.endArray()
    out.key("blocker")
    switch blocker {
    case nil: out.null()
    case .belowMinimum(let missing):
      out.beginObject()
      out.key("kind")
      out.string("belowMinimum")
      out.key("missing")
      out.money(missing)
      out.endObject()
    case .hubClosed(let opensAt):
      out.beginObject()
      out.key("kind")
      out.string("hubClosed")
      out.key("opensAt")
      if let opensAt { out.date(opensAt) } else { out.null() }
      out.endObject()
    }
    out.key("hub")
    out.string(hub)
    out.key("lines")
    out.beginArray()
    for line in lines {
      out.pricedLine(
        sku: line.sku, name: line.name, quantity: line.quantity, unitPrice: line.unitPrice,
        deposit: line.deposit ?? .zero(line.unitPrice.currency), lineTotal: line.lineTotal,
        absentDeposit: .null)
    }
    out.endArray()
    out.key("promo")
    if let promo {
      out.beginObject()
      out.key("applied")
      out.bool(promo.applied)
      out.key("code")
      out.string(promo.code)
      out.key("description")
      out.string(promo.description)
      out.key("notice")
      if let notice = promo.notice { out.string(notice) } else { out.null() }
      out.endObject()
    } else {
      out.null()
    }
    out.key("totals")
    totals.write(into: &out)
    out.key("version")
    out.int(version)
    out.endObject()
    return out.bytes
  }
}

extension CartCheckoutRequest {
  /// The request's JSON written by hand (one per checkout): the bytes `JSON.encode(self)` writes.
  public var jsonBytes: [UInt8] {
    var out = JSONBytes(capacity: 160 + (counts?.count ?? 0) * 40)
    out.beginObject()
    if let cartVersion {
      out.key("cartVersion")
      out.int(cartVersion)
    }
    if let correlationId {
      out.key("correlationId")
      out.string(correlationId)
    }
    if let counts {
      out.key("counts")
      out.beginArray()
      for count in counts {
        out.beginObject()
        out.key("available")
        out.int(count.available)
        out.key("sku")
        out.string(count.sku)
        out.endObject()
      }
      out.endArray()
    }
    out.key("hub")
    out.string(hub)
    out.key("kind")
    out.string(kind.rawValue)
    out.key("userId")
    out.string(userId)
    out.endObject()
    return out.bytes
  }
}

extension CartTotals {
  /// Writes the totals as one JSON object, keys sorted (as `JSON.encoder()` does).
  public func write(into out: inout JSONBytes) {
    out.beginObject()
    for (name, money) in [
      ("deliveryFee", deliveryFee), ("deposit", deposit), ("discount", discount), ("fees", fees),
      ("smallBasketFee", smallBasketFee), ("subtotal", subtotal), ("total", total),
    ] {
      out.key(name)
      out.money(money)
    }
    out.endObject()
  }
}

extension CartCheckoutReply {
  /// The reply's JSON written by hand (one per checkout, around the cart's own writer): the
  /// bytes `JSON.encode(self)` writes.
  public func jsonBytes() -> [UInt8] {
    var out = JSONBytes(capacity: 64)
    out.beginObject()
    if let cart {
      out.key("cart")
      out.json(cart.jsonBytes())
    }
    if let error {
      out.key("error")
      error.write(into: &out)
    }
    out.key("matches")
    out.bool(matches)
    out.endObject()
    return out.bytes
  }
}

extension CartChanged {
  /// The payload's JSON written by hand (one per cart write): the bytes `JSON.encode(self)` writes.
  public func jsonBytes() -> [UInt8] {
    var out = JSONBytes(capacity: 128 + lines.count * 40)
    out.beginObject()
    out.key("hub")
    out.string(hub)
    out.key("lines")
    out.beginArray()
    for line in lines { out.skuQuantity(sku: line.sku, quantity: line.quantity) }
    out.endArray()
    if let promo {
      out.key("promo")
      out.string(promo)
    }
    out.key("reason")
    out.string(reason)
    out.key("userId")
    out.string(userId)
    out.key("version")
    out.int(version)
    out.endObject()
    return out.bytes
  }
}

// MARK: - Read by hand (one checkout question and its answer per order)

extension CartCheckoutRequest.Count: JSONReadable {
  public init(reading reader: inout JSONReader) throws {
    var sku: SKU?
    var available: Int?
    try reader.readObject { reader, key in
      switch key {
      case "sku": sku = try reader.readString()
      case "available": available = try reader.readInt()
      default: try reader.skipValue()
      }
    }
    guard let sku, let available else { throw JSONReader.Failure("a count needs sku and available") }
    self.init(sku: sku, available: available)
  }
}

extension CartCheckoutRequest: JSONReadable {
  /// CartService reads one request per checkout. A body the reader refuses (an unknown `kind`,
  /// a missing field) goes to the decoder through `JSON.read`, which gives the error.
  public init(reading reader: inout JSONReader) throws {
    var kind: Kind?
    var userId: String?
    var hub: HubID?
    var cartVersion: Int64?
    var counts: [Count]?
    var correlationId: String?
    try reader.readObject { reader, key in
      switch key {
      case "kind": kind = Kind(rawValue: try reader.readString())
      case "userId": userId = try reader.readString()
      case "hub": hub = try reader.readString()
      case "cartVersion": cartVersion = reader.readNull() ? nil : try reader.readInt64()
      case "correlationId": correlationId = reader.readNull() ? nil : try reader.readString()
      case "counts":
        if reader.readNull() { break }
        var read: [Count] = []
        try reader.readArray { read.append(try Count(reading: &$0)) }
        counts = read
      default: try reader.skipValue()
      }
    }
    guard let kind, let userId, let hub else {
      throw JSONReader.Failure("a checkout request needs kind, userId and hub")
    }
    self.init(
      kind: kind, userId: userId, hub: hub, cartVersion: cartVersion, counts: counts,
      correlationId: correlationId)
  }
}

extension CartCheckoutReply: JSONReadable {
  public init(reading reader: inout JSONReader) throws {
    var cart: CartView?
    var matches: Bool?
    var error: RemoteError?
    try reader.readObject { reader, key in
      switch key {
      case "cart": cart = reader.readNull() ? nil : try CartView(reading: &reader)
      case "matches": matches = try reader.readBool()
      case "error": error = reader.readNull() ? nil : try RemoteError(reading: &reader)
      default: try reader.skipValue()
      }
    }
    guard let matches else { throw JSONReader.Failure("a checkout reply needs matches") }
    self.init(cart: cart, matches: matches, error: error)
  }
}

extension CartView: JSONReadable {
  /// The carts a checkout goes on with: no adjustments and no blocker. Any other cart is left to
  /// `JSONDecoder` (the reader refuses it), which knows every adjustment and blocker.
  public init(reading reader: inout JSONReader) throws {
    var hub: HubID?
    var version: Int64?
    var lines: [CartLineView] = []
    var promo: CartPromoView?
    var totals: CartTotals?
    var sawLines = false
    var sawAdjustments = false
    try reader.readObject { reader, key in
      switch key {
      case "hub": hub = try reader.readString()
      case "version": version = try reader.readInt64()
      case "lines":
        sawLines = true
        try reader.readArray { reader in lines.append(try CartLineView(reading: &reader)) }
      case "adjustments":
        sawAdjustments = true
        try reader.readArray { _ in throw JSONReader.Failure("adjustments are left to JSONDecoder") }
      case "promo": promo = reader.readNull() ? nil : try CartPromoView(reading: &reader)
      case "totals": totals = try CartTotals(reading: &reader)
      case "blocker":
        guard reader.readNull() else { throw JSONReader.Failure("blockers are left to JSONDecoder") }
      default: try reader.skipValue()
      }
    }
    guard let hub, let version, let totals, sawLines, sawAdjustments else {
      throw JSONReader.Failure("a cart needs hub, version, lines, adjustments and totals")
    }
    self.init(
      hub: hub, version: version, lines: lines, adjustments: [], promo: promo, totals: totals, blocker: nil)
  }
}

extension CartLineView: JSONReadable {
  public init(reading reader: inout JSONReader) throws {
    var sku: SKU?
    var name: String?
    var quantity: Int?
    var unitPrice: Money?
    var deposit: Money?
    var lineTotal: Money?
    try reader.readObject { reader, key in
      switch key {
      case "sku": sku = try reader.readString()
      case "name": name = try reader.readString()
      case "quantity": quantity = try reader.readInt()
      case "unitPrice": unitPrice = try Money(reading: &reader)
      case "deposit": deposit = reader.readNull() ? nil : CartLineView.deposit(try Money(reading: &reader))
      case "lineTotal": lineTotal = try Money(reading: &reader)
      default: try reader.skipValue()
      }
    }
    guard let sku, let name, let quantity, let unitPrice, let lineTotal else {
      throw JSONReader.Failure("a cart line needs sku, name, quantity, unitPrice and lineTotal")
    }
    self.init(
      sku: sku, name: name, quantity: quantity, unitPrice: unitPrice, deposit: deposit, lineTotal: lineTotal)
  }
}

extension CartPromoView: JSONReadable {
  public init(reading reader: inout JSONReader) throws {
    var code: String?
    var description: String?
    var applied: Bool?
    var notice: String?
    try reader.readObject { reader, key in
      switch key {
      case "code": code = try reader.readString()
      case "description": description = try reader.readString()
      case "applied": applied = try reader.readBool()
      case "notice": notice = reader.readNull() ? nil : try reader.readString()
      default: try reader.skipValue()
      }
    }
    guard let code, let description, let applied else {
      throw JSONReader.Failure("a promo needs code, description and applied")
    }
    self.init(code: code, description: description, applied: applied, notice: notice)
  }
}

extension CartTotals: JSONReadable {
  public init(reading reader: inout JSONReader) throws {
    var amounts: [String: Money] = [:]
    try reader.readObject { reader, key in
      switch key {
      case "subtotal", "deposit", "deliveryFee", "smallBasketFee", "discount", "total":
        amounts[key] = try Money(reading: &reader)
      default: try reader.skipValue()
      }
    }
    guard let subtotal = amounts["subtotal"], let deposit = amounts["deposit"],
      let deliveryFee = amounts["deliveryFee"], let smallBasketFee = amounts["smallBasketFee"],
      let discount = amounts["discount"], let total = amounts["total"]
    else { throw JSONReader.Failure("totals need all six amounts") }
    self.init(
      subtotal: subtotal, deposit: deposit, deliveryFee: deliveryFee, smallBasketFee: smallBasketFee,
      discount: discount, total: total)
  }
}

/// Writers the contracts' hand-written JSON shares, keys in sorted order.
extension JSONBytes {
  /// What to write for a line without a deposit.
  enum AbsentField { case null, omitted }

  /// A priced line: `{deposit, lineTotal, name, quantity, sku, unitPrice}`.
  mutating func pricedLine(
    sku: SKU, name: String, quantity: Int, unitPrice: Money, deposit: Money?, lineTotal: Money,
    absentDeposit: AbsentField
  ) {
    beginObject()
    if let deposit {
      key("deposit")
      money(deposit)
    } else if absentDeposit == .null {
      key("deposit")
      null()
    }
    key("lineTotal")
    money(lineTotal)
    key("name")
    string(name)
    key("quantity")
    int(quantity)
    key("sku")
    string(sku)
    key("unitPrice")
    money(unitPrice)
    endObject()
  }

  /// `{quantity, sku}`: a line as cart events and reservations carry it.
  mutating func skuQuantity(sku: SKU, quantity: Int) {
    beginObject()
    key("quantity")
    int(quantity)
    key("sku")
    string(sku)
    endObject()
  }
}
