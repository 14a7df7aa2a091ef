import Foundation
import GrocerContracts
import GrocerCore

/// Everything CartService can refuse, each with a stable machine `code` and a human `detail`.
///
/// `kind` tells the transport which status fits: `.malformed` → 400, `.invalid` → 422,
/// `.notFound` → 404, `.unavailable` → 503.
public enum CartError: Error, Hashable, Sendable, CustomStringConvertible {
  // The body or a parameter does not have our shape (400).
  case malformedJSON(String)
  case wrongType(field: String, expected: String)
  case missingField(String)
  case unknownField(String)
  case invalidSeenVersion(String)
  // Well-formed but breaking a rule (422).
  case quantityOutOfRange(Int)
  case unknownProduct(SKU)
  case unknownPromotion(String)
  case promotionExpired(String)
  case promotionNotValidAtHub(code: String, hub: HubID)
  case invalidPromotion(String)
  case invalidPromoCode(String)
  // Not found (404).
  case unknownHub(HubID)
  case promotionNotFound(String)
  // The local catalogue copy is still being filled (503).
  case catalogueLoading

  public enum Kind: Sendable, Hashable {
    case malformed, invalid, notFound, unavailable
  }

  public var kind: Kind {
    switch self {
    case .malformedJSON, .wrongType, .missingField, .unknownField, .invalidSeenVersion: .malformed
    case .unknownHub, .promotionNotFound: .notFound
    case .catalogueLoading: .unavailable
    default: .invalid
    }
  }

  public var code: String {
    switch self {
    case .malformedJSON: "malformedJSON"
    case .wrongType: "wrongType"
    case .missingField: "missingField"
    case .unknownField: "unknownField"
    case .invalidSeenVersion: "invalidSeenVersion"
    case .quantityOutOfRange: "quantityOutOfRange"
    case .unknownProduct: "unknownProduct"
    case .unknownPromotion: "unknownPromotion"
    case .promotionExpired: "promotionExpired"
    case .promotionNotValidAtHub: "promotionNotValidAtHub"
    case .invalidPromotion: "invalidPromotion"
    case .invalidPromoCode: "invalidPromoCode"
    case .unknownHub: "unknownHub"
    case .promotionNotFound: "unknownPromotion"
    case .catalogueLoading: "catalogueLoading"
    }
  }

  /// A sentence for people; it only echoes what the client sent, clipped.
  public var detail: String {
    switch self {
    case .malformedJSON(let why): "The body is not valid JSON: \(why)."
    case .wrongType(let field, let expected): "`\(field)` must be \(expected)."
    case .missingField(let field): "`\(field)` is required."
    case .unknownField(let field): "`\(field)` is not a known field."
    case .invalidSeenVersion(let text): "`seenVersion` must be a whole number ≥ 0, got `\(Self.clip(text))`."
    case .quantityOutOfRange(let quantity): "`quantity` must be between 0 and 99, got \(quantity)."
    case .unknownProduct(let sku): "This hub has no product `\(Self.clip(sku))`."
    case .unknownPromotion(let code): "There is no promo code `\(Self.clip(code))`."
    case .promotionExpired(let code): "The promo code `\(Self.clip(code))` has expired."
    case .promotionNotValidAtHub(let code, let hub):
      "The promo code `\(Self.clip(code))` is not valid at hub \(hub)."
    case .invalidPromotion(let why): "The promotion \(why)."
    case .invalidPromoCode(let code):
      "`\(Self.clip(code))` is not a promo code (1–32 letters, digits, `-` or `_`)."
    case .unknownHub(let hub): "There is no hub `\(Self.clip(hub))`."
    case .promotionNotFound(let code): "There is no promo code `\(Self.clip(code))`."
    case .catalogueLoading: "Prices are still being loaded; try again in a few seconds."
    }
  }

  public var description: String { "\(code): \(detail)" }

  static func clip(_ text: String) -> String {
    text.count <= 70 ? text : String(text.prefix(67)) + "…"
  }
}

extension CartError {
  /// The same refusal for a body that could not be read.
  public init(_ error: BodyError) {
    switch error {
    case .malformedJSON(let why): self = .malformedJSON(why)
    case .wrongType(let field, let expected): self = .wrongType(field: field, expected: expected)
    case .missingField(let field): self = .missingField(field)
    case .unknownField(let field): self = .unknownField(field)
    case .rule(let error as CartError): self = error
    case .rule(let error): self = .invalidPromotion("\(error)")
    }
  }
}

extension StrictBody {
  /// Decodes a body strictly, answering CartService's errors.
  public static func decodeCartBody(from data: Data) throws(CartError) -> Self {
    try decode(from: data, mappingErrors: CartError.init)
  }
}

extension CartError {
  /// Why a hub the catalogue copy does not know has no cart: the copy is still being filled
  /// (retry soon), or there is no such hub.
  static func missingHub(_ id: HubID, catalogueSynced: Bool) -> CartError {
    catalogueSynced ? .unknownHub(id) : .catalogueLoading
  }
}
