import Foundation
import GrocerContracts
import GrocerCore
import GrocerHTTP

extension DomainError {
  /// The problem a caller sees: malformed input is 400, a broken rule 422, a conflict 409, an
  /// unknown hub or product 404.
  var httpError: HTTPError {
    switch kind {
    case .malformed: .badRequest(code: code, detail: detail)
    case .invalid: .unprocessable(code: code, detail: detail)
    case .conflict: .conflict(code: code, detail: detail)
    case .notFound: .notFound(code: code, detail: detail)
    }
  }
}

extension HTTPRequest {
  /// Decodes a JSON body strictly (wrong types and, where the body says so, unknown fields are
  /// errors). Not JSON → 415; malformed → 400; invalid → 422.
  func decodeStrict<T: StrictBody>(_ type: T.Type) throws(HTTPError) -> T {
    try requireJSONBody()
    do {
      return try T.decodeStrict(from: Data(body))
    } catch {
      throw error.httpError
    }
  }

  /// The path's `{hub}`, validated.
  func hubParameter() throws(HTTPError) -> HubID {
    let hub = try pathParameter("hub")
    do { try Identifier.validateHub(hub) } catch {
      throw HTTPError.notFound(code: "unknownHub", detail: "no hub \(hub)")
    }
    return hub
  }

  /// The path's `{sku}`; one that breaks the id rule is a 404 `unknownProduct`.
  func skuParameter() throws(HTTPError) -> SKU {
    let sku = try pathParameter("sku")
    // A product that cannot exist is as unknown as one that does not.
    guard Identifier.isValid(sku) else {
      throw HTTPError.notFound(code: "unknownProduct", detail: "there is no product \(sku)")
    }
    return sku
  }

  /// The caller, who must be staff of `hub` (403 otherwise; the route already demanded a token).
  func requireStaff(of hub: HubID) throws(HTTPError) -> Principal {
    guard let principal, principal.isStaff(of: hub) else {
      throw HTTPError.forbidden(detail: "this token may not change hub \(hub)")
    }
    return principal
  }
}
