import Foundation
import GrocerAuth
import GrocerContracts
import GrocerCore

/// How the customer pays: Apple Pay or a card (both as a token from the provider's SDK).
public enum PaymentMethod: String, Codable, Hashable, Sendable, CaseIterable {
  case applePay
  case card
}

/// Body of `POST /v1/orders`:
/// `{ "hub", "cartVersion", "payment": { "method", "token" }, "deliverTo": { "lat", "lng" }? }`.
public struct PlaceOrderBody: StrictBody, Codable, Hashable {
  public static let allowedKeys: Set<String> = ["hub", "cartVersion", "payment", "deliverTo"]

  public struct Payment: Codable, Hashable, Sendable {
    public var method: String
    public var token: String

    public init(method: String, token: String) {
      self.method = method
      self.token = token
    }
  }

  public var hub: HubID
  public var cartVersion: Int64
  public var payment: Payment
  public var deliverTo: GeoPoint?

  public init(hub: HubID, cartVersion: Int64, payment: Payment, deliverTo: GeoPoint? = nil) {
    self.hub = hub
    self.cartVersion = cartVersion
    self.payment = payment
    self.deliverTo = deliverTo
  }

  /// Longest payment token accepted (provider tokens are far shorter).
  public static let maximumTokenLength = 2048

  /// The body's rules, past its shape: a known payment method, a token, a real place.
  public func validate() throws(OrderError) -> PaymentMethod {
    guard Identifier.isValid(hub) else { throw .unknownHub(hub) }
    guard cartVersion >= 0 else {
      throw OrderError(.invalid, "invalidCartVersion", "`cartVersion` must be 0 or more, not \(cartVersion)")
    }
    guard let method = PaymentMethod(rawValue: payment.method) else {
      throw OrderError(
        .invalid, "unknownPaymentMethod",
        "`payment.method` must be one of \(PaymentMethod.allCases.map(\.rawValue).joined(separator: ", "))")
    }
    let token = payment.token.trimmingCharacters(in: .whitespaces)
    guard !token.isEmpty, payment.token.utf8.count <= Self.maximumTokenLength else {
      throw OrderError(
        .invalid, "invalidPaymentToken",
        "`payment.token` must be 1…\(Self.maximumTokenLength) bytes from the payment SDK")
    }
    if let deliverTo, !deliverTo.isValid {
      throw OrderError(
        .invalid, "invalidCoordinates", "`deliverTo` needs lat in −90…90 and lng in −180…180")
    }
    return method
  }

  /// What makes two requests "the same body" for an idempotency key: the SHA-256 of the decoded
  /// body written with sorted keys, so spacing and key order do not matter but every value does.
  public var fingerprint: String {
    let encoder = JSONEncoder()
    encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
    let bytes = (try? encoder.encode(self)).map { [UInt8]($0) } ?? []
    return SHA256.hex(bytes)
  }
}

/// The `Idempotency-Key` header: 1…255 visible ASCII characters (a UUID, usually).
public enum IdempotencyKey {
  public static let header = "Idempotency-Key"
  public static let maximumLength = 255

  public static func validate(_ raw: String?) throws(OrderError) -> String {
    guard let raw, !raw.isEmpty else {
      throw OrderError(
        .malformed, "idempotencyKeyRequired",
        "send an `Idempotency-Key` header (one random key per checkout attempt)")
    }
    guard raw.utf8.count <= maximumLength, raw.utf8.allSatisfy({ (0x21...0x7E).contains($0) }) else {
      throw OrderError(
        .malformed, "invalidIdempotencyKey",
        "`Idempotency-Key` must be 1…\(maximumLength) visible ASCII characters")
    }
    return raw
  }
}
