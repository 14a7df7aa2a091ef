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

  public struct Payment: Codable, Hashable, Sendable, JSONReadable {
    public var method: String
    public var token: String

    public init(method: String, token: String) {
      self.method = method
      self.token = token
    }

    public init(reading reader: inout JSONReader) throws {
      var method: String?
      var token: String?
      try reader.readObject { reader, key in
        switch key {
        case "method": method = try reader.readString()
        case "token": token = try reader.readString()
        default: try reader.skipValue()
        }
      }
      guard let method, let token else { throw JSONReader.Failure("payment needs method and token") }
      self.init(method: method, token: token)
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
    // Where the order goes is part of it: the hub checks it against its delivery area, and
    // tracking shows it.
    guard let deliverTo else {
      throw OrderError(.invalid, "missingField", "`deliverTo` { lat, lng } is required")
    }
    guard deliverTo.isValid else {
      throw OrderError(
        .invalid, "invalidCoordinates", "`deliverTo` needs lat in −90…90 and lng in −180…180")
    }
    return method
  }

  /// What makes two requests "the same body" for an idempotency key: the SHA-256 of the decoded
  /// body written with sorted keys, so spacing and key order do not matter but every value does.
  /// Written by hand, byte for byte what `JSONEncoder` (sorted keys, slashes unescaped) writes
  /// (a test compares): fingerprints stored before must still match.
  public var fingerprint: String {
    var out = JSONBytes(capacity: 128 + payment.token.utf8.count)
    out.beginObject()
    out.key("cartVersion")
    out.int(cartVersion)
    if let deliverTo {
      out.key("deliverTo")
      deliverTo.write(into: &out)
    }
    out.key("hub")
    out.string(hub)
    out.key("payment")
    out.beginObject()
    out.key("method")
    out.string(payment.method)
    out.key("token")
    out.string(payment.token)
    out.endObject()
    out.endObject()
    return SHA256.hex(out.bytes)
  }

  /// The usual body read by hand (one per checkout); nil for anything else — an unknown or
  /// repeated key, a value of another type, a fraction where an integer goes — which
  /// `StrictJSON` then reads and explains. Nested objects may carry keys of their own, ignored
  /// as the decoder ignores them.
  public static func fast(_ body: [UInt8]) -> PlaceOrderBody? {
    var reader = JSONReader(body)
    var hub: HubID?
    var cartVersion: Int64?
    var payment: Payment?
    var deliverTo: GeoPoint?
    var seen = 0
    do {
      try reader.readObject { reader, key in
        let bit: Int
        switch key {
        case "hub":
          bit = 1
          hub = try reader.readString()
        case "cartVersion":
          bit = 2
          cartVersion = try reader.readInt64()
        case "payment":
          bit = 4
          payment = try Payment(reading: &reader)
        case "deliverTo":
          bit = 8
          deliverTo = reader.readNull() ? nil : try GeoPoint(reading: &reader)
        default:
          throw JSONReader.Failure("unknown key")
        }
        guard seen & bit == 0 else { throw JSONReader.Failure("repeated key") }
        seen |= bit
      }
      try reader.finish()
    } catch {
      return nil
    }
    guard let hub, let cartVersion, let payment else { return nil }
    return PlaceOrderBody(hub: hub, cartVersion: cartVersion, payment: payment, deliverTo: deliverTo)
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
