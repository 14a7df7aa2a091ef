import Foundation
import GrocerContracts
import GrocerCore

/// Everything StockService's rules can refuse, each with a stable machine `code` (problem+json's
/// `code`) and a human `detail`.
///
/// `kind` tells the transport which status fits without the domain knowing HTTP:
/// `.malformed` → 400, `.invalid` → 422, `.conflict` → 409, `.notFound` → 404.
public enum DomainError: Error, Hashable, Sendable, CustomStringConvertible {
  // The body or parameter does not have our shape (400).
  case malformedJSON(String)
  case wrongType(field: String, expected: String)
  case missingField(String)
  case unknownField(String)
  case missingIds
  case tooManyIds(Int)
  case invalidCoordinates(String)
  case invalidCursor(String)
  case invalidLimit(String)
  case invalidQuery(String)
  // Well-formed but breaking a rule (422).
  case invalidSKU(String)
  case invalidHubID(String)
  case invalidName(String)
  case invalidPrice(field: String, detail: String)
  case invalidCurrency(String)
  case currencyMismatch(field: String, expected: String, got: String)
  case invalidUnitPrice(String)
  case invalidCount(Int)
  case invalidDelta(Int)
  case invalidReason(String)
  case countWouldGoNegative(current: Int, delta: Int)
  case countTooLarge(current: Int, delta: Int)
  case invalidHours(String)
  case invalidPricing(String)
  case invalidOrderID(String)
  case invalidQuantity(sku: String, quantity: Int)
  case duplicateLine(String)
  case invalidLineCount(Int)
  case invalidArea(String)
  case invalidBrand(String)
  case invalidImage(field: String, detail: String)
  case unknownCategory(String)
  case invalidCategories(String)
  case invalidLayout(String)
  case outsideDeliveryArea(hub: String)
  // State conflicts (409).
  case reservationConflict(orderId: String)
  case reservationReleased(orderId: String)
  // Not found (404, or 422 `unknownProduct` where SPEC says so).
  case unknownHub(String)
  case unknownProduct(String)

  /// Which family of status the error belongs to.
  public enum Kind: Sendable, Hashable {
    case malformed, invalid, conflict, notFound
  }

  public var kind: Kind {
    switch self {
    case .malformedJSON, .wrongType, .missingField, .unknownField, .missingIds, .tooManyIds,
      .invalidCoordinates, .invalidCursor, .invalidLimit, .invalidQuery:
      .malformed
    case .reservationConflict, .reservationReleased: .conflict
    case .unknownHub, .unknownProduct: .notFound
    default: .invalid
    }
  }

  /// The stable machine code, e.g. `invalidSKU`.
  public var code: String {
    switch self {
    case .malformedJSON: "malformedJSON"
    case .wrongType: "wrongType"
    case .missingField: "missingField"
    case .unknownField: "unknownField"
    case .missingIds: "missingIds"
    case .tooManyIds: "tooManyIds"
    case .invalidCoordinates: "invalidCoordinates"
    case .invalidCursor: "invalidCursor"
    case .invalidLimit: "invalidLimit"
    case .invalidQuery: "invalidQuery"
    case .invalidSKU: "invalidSKU"
    case .invalidHubID: "invalidHubID"
    case .invalidName: "invalidName"
    case .invalidPrice: "invalidPrice"
    case .invalidCurrency: "invalidCurrency"
    case .currencyMismatch: "currencyMismatch"
    case .invalidUnitPrice: "invalidUnitPrice"
    case .invalidCount: "invalidCount"
    case .invalidDelta: "invalidDelta"
    case .invalidReason: "invalidReason"
    case .countWouldGoNegative: "countWouldGoNegative"
    case .countTooLarge: "countTooLarge"
    case .invalidHours: "invalidHours"
    case .invalidPricing: "invalidPricing"
    case .invalidOrderID: "invalidOrderID"
    case .invalidQuantity: "invalidQuantity"
    case .duplicateLine: "duplicateLine"
    case .invalidLineCount: "invalidLineCount"
    case .invalidArea: "invalidArea"
    case .invalidBrand: "invalidBrand"
    case .invalidImage: "invalidImage"
    case .unknownCategory: "unknownCategory"
    case .invalidCategories: "invalidCategories"
    case .invalidLayout: "invalidLayout"
    case .outsideDeliveryArea: "outsideDeliveryArea"
    case .reservationConflict: "reservationConflict"
    case .reservationReleased: "reservationReleased"
    case .unknownHub: "unknownHub"
    case .unknownProduct: "unknownProduct"
    }
  }

  /// A sentence for people; safe to show (it only echoes what the client sent).
  public var detail: String {
    switch self {
    case .malformedJSON(let why): "The body is not valid JSON: \(why)."
    case .wrongType(let field, let expected): "`\(field)` must be \(expected)."
    case .missingField(let field): "`\(field)` is required."
    case .unknownField(let field): "`\(field)` is not a known field."
    case .missingIds: "`ids` must name 1 to 100 products."
    case .tooManyIds(let count): "`ids` names \(count) products; at most 100 are allowed."
    case .invalidCoordinates(let why): "\(why)."
    case .invalidCursor(let why): "`cursor` \(why); start again without one."
    case .invalidLimit(let why): "`limit` \(why)."
    case .invalidQuery(let why): "`q` \(why)."
    case .invalidSKU(let sku):
      sku.isEmpty
        ? "`ids` contains an empty id."
        : "`\(Self.clip(sku))` is not a valid SKU (1–64 of A-Z a-z 0-9 . _ -)."
    case .invalidHubID(let hub): "`\(Self.clip(hub))` is not a valid hub id (1–64 of A-Z a-z 0-9 . _ -)."
    case .invalidName(let why): "`name` \(why)."
    case .invalidPrice(let field, let why): "`\(field)` \(why)."
    case .invalidCurrency(let currency): "`\(Self.clip(currency))` is not an ISO 4217 currency code."
    case .currencyMismatch(let field, let expected, let got):
      "`\(field)` is in \(Self.clip(got)) but this hub prices in \(expected)."
    case .invalidUnitPrice(let why): "`unitPrice` \(why)."
    case .invalidCount(let count): "`available` must be between 0 and 1000000, got \(count)."
    case .invalidDelta(let delta): "`delta` must be non-zero and at most 1000000 either way, got \(delta)."
    case .invalidReason(let reason):
      "`\(Self.clip(reason))` is not a reason; use one of \(StockAdjustment.Reason.allCases.map(\.rawValue).joined(separator: ", "))."
    case .countWouldGoNegative(let current, let delta):
      "The count is \(current); a change of \(delta) would take it below zero."
    case .countTooLarge(let current, let delta):
      "The count is \(current); a change of \(delta) would take it above 1000000."
    case .invalidHours(let why): "`hours` \(why)."
    case .invalidPricing(let why): "`pricing` \(why)."
    case .invalidOrderID(let id): "`\(Self.clip(id))` is not a valid order id."
    case .invalidQuantity(let sku, let quantity): "`\(sku)` has quantity \(quantity); allowed are 1 to 99."
    case .duplicateLine(let sku): "`\(sku)` appears in more than one line."
    case .invalidLineCount(let count): "A reservation needs 1 to 100 lines, got \(count)."
    case .invalidArea(let why): "\(why)."
    case .invalidBrand(let why): "`brand` \(why)."
    case .invalidImage(let field, let why): "`\(field)`: \(why)."
    case .unknownCategory(let id): "This hub has no category `\(Self.clip(id))`."
    case .invalidCategories(let why): "\(why)."
    case .invalidLayout(let why): "\(why)."
    case .outsideDeliveryArea(let hub): "Hub \(Self.clip(hub)) does not deliver to `deliverTo`."
    case .reservationConflict(let orderId):
      "Order `\(orderId)` already holds a reservation with different lines."
    case .reservationReleased(let orderId):
      "The reservation of order `\(orderId)` was released (declined, cancelled or timed out)."
    case .unknownHub(let hub): "There is no hub `\(Self.clip(hub))`."
    case .unknownProduct(let sku): "This hub has no product `\(Self.clip(sku))`."
    }
  }

  public var description: String { "\(code): \(detail)" }

  /// Keeps echoed client input short in messages.
  private static func clip(_ text: String) -> String {
    text.count <= 70 ? text : String(text.prefix(67)) + "…"
  }
}

extension DomainError {
  /// The same refusal for a rule of the shared contract.
  public init(_ error: ContractError) {
    switch error {
    case .invalidHours(let why): self = .invalidHours(why)
    case .invalidUnitPrice(let why): self = .invalidUnitPrice(why)
    }
  }
}

extension DomainError {
  /// The same refusal for a body that could not be read; a rule a nested decoder broke keeps
  /// its own code.
  public init(_ error: BodyError) {
    switch error {
    case .malformedJSON(let why): self = .malformedJSON(why)
    case .wrongType(let field, let expected): self = .wrongType(field: field, expected: expected)
    case .missingField(let field): self = .missingField(field)
    case .unknownField(let field): self = .unknownField(field)
    case .rule(let error as DomainError): self = error
    case .rule(let error as ContractError): self = DomainError(error)
    case .rule: self = .malformedJSON("unreadable")
    }
  }
}

extension StrictBody {
  /// Decodes a body strictly, answering StockService's errors.
  public static func decodeStrict(from data: Data) throws(DomainError) -> Self {
    try decode(from: data, mappingErrors: DomainError.init)
  }
}
