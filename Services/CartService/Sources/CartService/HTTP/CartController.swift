import Foundation
import GrocerContracts
import GrocerCore
import GrocerHTTP
import GrocerRuntime
import GrocerStorage

/// CartService's HTTP API: the customer's cart at a hub, and staff promo codes.
///
/// Every cart route needs a token; the cart is the token's `sub`'s, so another user's cart is
/// simply never addressed. Each endpoint maps its request to one use case (`CartCommands`);
/// writes run on the database's writer, one transaction each.
struct CartController: Sendable {
  let commands: CartCommands
  let clock: any WallClock
  /// Fills in a hub the catalogue copy does not know, if StockService has it (true then).
  let fillHub: @Sendable (HubID) async -> Bool

  var routes: [Route] {
    let getCart = Route("GET", "/v1/hubs/{hub}/cart", auth: .required, getCart)
    return [
      // Answered inside the transport's callback when unchanged (Benchmarks/cart: reads).
      commands.replies.remembers
        ? getCart.answeringFromMemory { request in try cartFromMemory(request) } : getCart,
      Route("PUT", "/v1/hubs/{hub}/cart/items/{sku}", auth: .required, putItem),
      Route("PUT", "/v1/hubs/{hub}/cart/promo", auth: .required, putPromo),
      Route("GET", "/v1/promos/{code}", auth: .roles([.staff]), getPromotion),
      Route("PUT", "/v1/promos/{code}", auth: .roles([.staff]), putPromotion),
      Route("DELETE", "/v1/promos/{code}", auth: .roles([.staff]), deletePromotion),
    ]
  }

  /// Body of `PUT …/cart/items/{sku}`.
  struct QuantityBody: StrictBody {
    static let allowedKeys: Set<String> = ["quantity"]
    var quantity: Int

    init(quantity: Int) { self.quantity = quantity }

    /// The common body `{"quantity": N}` (N a plain integer of at most 9 digits, spaces
    /// allowed between tokens) read without a JSON parser; anything else is nil and goes
    /// through `StrictJSON`, which explains what is wrong with it.
    static func fast(_ body: [UInt8]) -> QuantityBody? {
      var index = 0
      func skipSpaces() {
        while index < body.count, [0x20, 0x09, 0x0A, 0x0D].contains(body[index]) { index += 1 }
      }
      func expect(_ text: String) -> Bool {
        for byte in text.utf8 {
          guard index < body.count, body[index] == byte else { return false }
          index += 1
        }
        return true
      }
      skipSpaces()
      guard expect("{") else { return nil }
      skipSpaces()
      guard expect("\"quantity\"") else { return nil }
      skipSpaces()
      guard expect(":") else { return nil }
      skipSpaces()
      let negative = index < body.count && body[index] == UInt8(ascii: "-")
      if negative { index += 1 }
      var value = 0
      var digits = 0
      while index < body.count, body[index] >= UInt8(ascii: "0"), body[index] <= UInt8(ascii: "9"),
        digits < 10
      {
        value = value * 10 + Int(body[index] - UInt8(ascii: "0"))
        index += 1
        digits += 1
      }
      // JSON has no leading zeros: `007` is for StrictJSON to refuse.
      guard (1...9).contains(digits), digits == 1 || body[index - digits] != UInt8(ascii: "0") else {
        return nil
      }
      skipSpaces()
      guard expect("}") else { return nil }
      skipSpaces()
      guard index == body.count else { return nil }
      return QuantityBody(quantity: negative ? -value : value)
    }
  }

  /// Body of `PUT …/cart/promo`: `{ "code": "SPRING" }` or `{ "code": null }`.
  struct PromoBody: StrictBody {
    static let allowedKeys: Set<String> = ["code"]
    var code: String?

    init(from decoder: any Decoder) throws {
      let container = try decoder.container(keyedBy: CodingKeys.self)
      // The key must be there; `null` removes the code.
      guard container.contains(.code) else {
        throw DecodingError.keyNotFound(
          CodingKeys.code, .init(codingPath: [], debugDescription: "`code` is required"))
      }
      code = try container.decode(String?.self, forKey: .code)
    }

    enum CodingKeys: String, CodingKey { case code }
  }

  /// A cart that did not change since it was last read is answered from memory; nil reads it
  /// from the database (`getCart`).
  func cartFromMemory(_ request: HTTPRequest) throws -> HTTPResponse? {
    let (user, hub) = try Self.owner(request)
    let seen = try Self.seenVersion(request)
    guard let bytes = commands.replies.reply(user: user, hub: hub, seenVersion: seen, now: clock.now()) else {
      return nil
    }
    return Self.cartResponse(bytes)
  }

  @Sendable func getCart(_ request: HTTPRequest) async throws -> HTTPResponse {
    if let remembered = try cartFromMemory(request) { return remembered }
    let (user, hub) = try Self.owner(request)
    let seen = try Self.seenVersion(request)
    return try await stored(hub: hub, writes: false) { try $0.cart(user: user, hub: hub, seenVersion: seen) }
  }

  /// The quantity PUT, the busiest write: checked, then handed straight to the database's writer
  /// queue (joining its next group commit) and encoded once the handler resumes, off the writer.
  /// A hub the copy does not know (or a copy still loading) goes through `stored`, which can ask
  /// StockService for it.
  @Sendable func putItem(_ request: HTTPRequest) async throws -> HTTPResponse {
    let (hub, write) = try Self.quantityWrite(request)
    let commands = self.commands
    let view: CartView
    do {
      view = try await commands.store.database.onWriterQueue { try write(commands) }
    } catch let error as CartError where error.kind == .notFound || error.kind == .unavailable {
      return try await stored(hub: hub, writes: true, write)
    } catch {
      throw Self.http(error)
    }
    return Self.cartResponse(view.jsonBytes())
  }

  /// The quantity PUT's checks, and the write it asks for.
  static func quantityWrite(_ request: HTTPRequest) throws -> (
    HubID, @Sendable (CartCommands) throws -> CartView
  ) {
    let (user, hub) = try owner(request)
    let sku = try request.pathParameter("sku")
    guard Identifier.isValid(sku) else { throw http(.unknownProduct(sku)) }
    let seen = try seenVersion(request)
    let body = try decode(QuantityBody.self, request)
    let correlation = request.requestID
    return (
      hub,
      {
        try $0.setQuantity(
          user: user, hub: hub, sku: sku, quantity: body.quantity, seenVersion: seen,
          correlationID: correlation)
      }
    )
  }

  @Sendable func putPromo(_ request: HTTPRequest) async throws -> HTTPResponse {
    let (user, hub) = try Self.owner(request)
    let seen = try Self.seenVersion(request)
    let body = try Self.decode(PromoBody.self, request)
    let correlation = request.requestID
    return try await stored(hub: hub, writes: true) {
      try $0.setPromo(user: user, hub: hub, code: body.code, seenVersion: seen, correlationID: correlation)
    }
  }

  @Sendable func getPromotion(_ request: HTTPRequest) async throws -> HTTPResponse {
    let code = try Self.code(request)
    guard let promo = try await run(writes: false, { try $0.store.promotion(code) }) else {
      throw Self.http(.promotionNotFound(code))
    }
    return try HTTPResponse.json(value: promo)
  }

  @Sendable func putPromotion(_ request: HTTPRequest) async throws -> HTTPResponse {
    let code = try Self.code(request)
    let body = try Self.decode(PromotionUpsert.self, request)
    let promo: Promotion
    do { promo = try body.validate(code: code) } catch { throw Self.http(error) }
    try Self.requireStaff(request, for: promo)
    let correlation = request.requestID
    let created = try await run(writes: true) { try $0.upsertPromotion(promo, correlationID: correlation) }
    return try HTTPResponse.json(status: created ? 201 : 200, value: promo)
  }

  @Sendable func deletePromotion(_ request: HTTPRequest) async throws -> HTTPResponse {
    let code = try Self.code(request)
    if let existing = try await run(writes: false, { try $0.store.promotion(code) }) {
      try Self.requireStaff(request, for: existing)
    }
    let correlation = request.requestID
    guard try await run(writes: true, { try $0.deletePromotion(code, correlationID: correlation) }) else {
      throw Self.http(.promotionNotFound(code))
    }
    return HTTPResponse(status: 204)
  }

  // MARK: Helpers

  /// The caller (the route demanded a token) and the path's hub; a hub id that cannot exist is
  /// as unknown as one that does not.
  static func owner(_ request: HTTPRequest) throws -> (user: String, hub: HubID) {
    guard let principal = request.principal else { throw HTTPError.unauthorized() }
    let hub = try request.pathParameter("hub")
    guard Identifier.isValid(hub) else { throw http(.unknownHub(hub)) }
    return (principal.subject, hub)
  }

  static func code(_ request: HTTPRequest) throws -> String {
    let raw = try request.pathParameter("code")
    guard let code = Promotion.normalize(raw) else { throw http(.invalidPromoCode(raw)) }
    return code
  }

  /// Staff may define codes for the hubs they run; a code for every hub needs `hubs: ["*"]`.
  static func requireStaff(_ request: HTTPRequest, for promo: Promotion) throws {
    guard let principal = request.principal else { throw HTTPError.unauthorized() }
    let allowed = promo.hubs.map { $0.allSatisfy(principal.isStaff(of:)) } ?? principal.hubs.contains("*")
    guard allowed else {
      throw HTTPError.forbidden(detail: "this token may not define promo codes for those hubs")
    }
  }

  static func seenVersion(_ request: HTTPRequest) throws -> Int64? {
    guard let text = request.query["seenVersion"] else { return nil }
    guard let value = Int64(text), value >= 0 else { throw http(.invalidSeenVersion(text)) }
    return value
  }

  static func decode<T: StrictBody>(_ type: T.Type, _ request: HTTPRequest) throws -> T {
    try request.requireJSONBody()
    do { return try T.decode(from: request.body, mappingErrors: CartError.init) } catch { throw http(error) }
  }

  /// Runs a use case off the cooperative pool (SQLite blocks on its lock and the disk). A
  /// broken rule becomes its problem; storage trouble (busy, I/O) a 503 with `Retry-After`.
  ///
  /// Writes go to the database's writer queue, one at a time; reads to the blocking pool.
  func run<T: Sendable>(writes: Bool, _ body: @escaping @Sendable (CartCommands) throws -> T) async throws
    -> T
  {
    let commands = self.commands
    do {
      if writes { return try await commands.store.database.onWriterQueue { try body(commands) } }
      return try await runBlocking { try body(commands) }
    } catch {
      throw Self.http(error)
    }
  }

  /// `run` for a call that answers the whole cart of `hub`. A hub the copy does not know is
  /// asked for once at StockService before the answer is 404 (or 503 while the copy fills).
  func stored(hub: HubID, writes: Bool, _ body: @escaping @Sendable (CartCommands) throws -> CartView)
    async throws
    -> HTTPResponse
  {
    let view: CartView
    do {
      view = try await run(writes: writes, body)
    } catch let error as HTTPError where error.code == "unknownHub" || error.code == "catalogueLoading" {
      guard await fillHub(hub) else { throw error }
      view = try await run(writes: writes, body)
    }
    return Self.cartResponse(view.jsonBytes())
  }

  /// A cart reply: personal, so no shared cache may keep it.
  static func cartResponse(_ bytes: [UInt8]) -> HTTPResponse {
    HTTPResponse.json(bytes: bytes, headers: ["Cache-Control": "private, no-store"])
  }

  /// What a caller sees of an error from the store: its rule's problem, 503 for storage trouble.
  static func http(_ error: any Error) -> any Error {
    switch error {
    case let error as CartError: http(error)
    case let error as StorageError:
      HTTPError.serviceUnavailable(retryAfter: 1, detail: "the cart database is busy (\(error))")
    default: error
    }
  }

  static func http(_ error: CartError) -> HTTPError {
    switch error.kind {
    case .malformed: .badRequest(code: error.code, detail: error.detail)
    case .invalid: .unprocessable(code: error.code, detail: error.detail)
    case .notFound: .notFound(code: error.code, detail: error.detail)
    case .unavailable:
      HTTPError(status: 503, code: error.code, detail: error.detail, headers: ["Retry-After": "2"])
    }
  }
}
