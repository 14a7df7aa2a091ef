import Foundation
import GrocerAuth
import GrocerContracts
import GrocerCore
import Testing

@testable import OrderService

@Suite struct PlaceOrderBodyTests {
  static func decode(_ json: String) throws(OrderError) -> PlaceOrderBody {
    try PlaceOrderBody.decode(from: Array(json.utf8), mappingErrors: OrderError.init)
  }

  static let valid =
    #"{"hub":"h1","cartVersion":18,"payment":{"method":"applePay","token":"tok"},"deliverTo":{"lat":52.53,"lng":13.41}}"#

  @Test func aValidBodyDecodesAndValidates() throws {
    let body = try Self.decode(Self.valid)
    #expect(body.hub == "h1")
    #expect(body.cartVersion == 18)
    #expect(try body.validate() == .applePay)
    #expect(body.deliverTo == GeoPoint(lat: 52.53, lng: 13.41))
    // Without deliverTo the order has nowhere to go: 422 missingField (the hub checks the point
    // against its delivery area, and tracking shows it).
    let bare = try Self.decode(#"{"hub":"h1","cartVersion":0,"payment":{"method":"card","token":"t"}}"#)
    do {
      _ = try bare.validate()
      Issue.record("a body without deliverTo was accepted")
    } catch {
      #expect(error.kind == .invalid && error.code == "missingField")
    }
  }

  @Test(arguments: [
    (#"{"hub":"h1","cartVersion":1,"payment":{"method":"card","token":"t"}"#, "malformedJSON"),
    (#"{"hub":"h1","payment":{"method":"card","token":"t"}}"#, "missingField"),
    (#"{"hub":"h1","cartVersion":"1","payment":{"method":"card","token":"t"}}"#, "wrongType"),
    (#"{"hub":"h1","cartVersion":1.5,"payment":{"method":"card","token":"t"}}"#, "wrongType"),
    (#"{"hub":"h1","cartVersion":1,"payment":{"method":"card","token":"t"},"tip":1}"#, "unknownField"),
    (#"{"hub":"h1","cartVersion":1,"payment":{"method":"card"}}"#, "missingField"),
  ])
  func malformedBodiesAre400(json: String, code: String) {
    #expect(throws: OrderError(.malformed, code, "")) {
      try Self.decodeIgnoringDetail(json)
    }
  }

  /// Decodes and compares errors by kind and code only.
  static func decodeIgnoringDetail(_ json: String) throws {
    do { _ = try decode(json) } catch { throw OrderError(error.kind, error.code, "") }
  }

  @Test(arguments: [
    (#"{"hub":"h1","cartVersion":-1,"payment":{"method":"card","token":"t"}}"#, "invalidCartVersion"),
    (#"{"hub":"h1","cartVersion":1,"payment":{"method":"cash","token":"t"}}"#, "unknownPaymentMethod"),
    (#"{"hub":"h1","cartVersion":1,"payment":{"method":"card","token":"  "}}"#, "invalidPaymentToken"),
    (
      #"{"hub":"h1","cartVersion":1,"payment":{"method":"card","token":"t"},"deliverTo":{"lat":91,"lng":0}}"#,
      "invalidCoordinates"
    ),
    (
      #"{"hub":"h1","cartVersion":1,"payment":{"method":"card","token":"t"},"deliverTo":{"lat":0,"lng":-180.5}}"#,
      "invalidCoordinates"
    ),
  ])
  func bodiesAgainstTheRulesAre422(json: String, code: String) throws {
    let body = try Self.decode(json)
    do {
      _ = try body.validate()
      Issue.record("validated: \(json)")
    } catch {
      #expect(error.kind == .invalid)
      #expect(error.code == code)
    }
  }

  @Test func aHubThatCannotExistIsUnknown() throws {
    let body = try Self.decode(#"{"hub":"../etc","cartVersion":1,"payment":{"method":"card","token":"t"}}"#)
    #expect(throws: OrderError.unknownHub("../etc")) { _ = try body.validate() }
  }

  @Test func theFingerprintIgnoresSpacingAndKeyOrderButNotValues() throws {
    let a = try Self.decode(Self.valid)
    let b = try Self.decode(
      #"{ "deliverTo": {"lng":13.41, "lat":52.53}, "payment": {"token":"tok","method":"applePay"}, "cartVersion": 18, "hub": "h1" }"#
    )
    #expect(a.fingerprint == b.fingerprint)
    #expect(a.fingerprint.count == 64)
    var c = a
    c.cartVersion = 19
    #expect(c.fingerprint != a.fingerprint)
    var d = a
    d.payment.token = "tok2"
    #expect(d.fingerprint != a.fingerprint)
  }

  @Test func theHandWrittenFingerprintIsTheEncodersBytesHashed() throws {
    let encoder = JSONEncoder()
    encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
    for body in [
      try Self.decode(Self.valid),
      PlaceOrderBody(hub: "h1", cartVersion: 0, payment: .init(method: "card", token: "a/b\"c\\d\n é")),
      PlaceOrderBody(
        hub: "h2", cartVersion: 9_007_199_254_740_993, payment: .init(method: "applePay", token: "t"),
        deliverTo: GeoPoint(lat: -0.000_01, lng: 180)),
      PlaceOrderBody(
        hub: "h3", cartVersion: 5, payment: .init(method: "x", token: "t"),
        deliverTo: GeoPoint(lat: 52.5, lng: 1e-7)),
    ] {
      #expect(body.fingerprint == SHA256.hex([UInt8](try encoder.encode(body))))
    }
  }

  @Test(arguments: [
    Self.valid,
    #"{"hub":"h1","cartVersion":0,"payment":{"method":"card","token":"t"}}"#,
    #" { "payment" : { "token" : "t\u00e9" , "method" : "card", "extra": [1, {"a": null}] } , "cartVersion" : 7 , "hub" : "h2", "deliverTo": null } "#,
    #"{"hub":"h1","cartVersion":1.0,"payment":{"method":"card","token":"t"}}"#,
    #"{"hub":"h1","cartVersion":1,"payment":{"method":"card","token":"t"},"tip":1}"#,
    #"{"hub":"h1","hub":"h2","cartVersion":1,"payment":{"method":"card","token":"t"}}"#,
    #"{"hub":"h1","cartVersion":"1","payment":{"method":"card","token":"t"}}"#,
    #"{"hub":"h1","cartVersion":1,"payment":{"method":"card"}}"#,
    #"{"hub":"h1","cartVersion":01,"payment":{"method":"card","token":"t"}}"#,
    #"{"hub":"h1","cartVersion":1,"payment":{"method":"card","token":"t"},"deliverTo":{"lat":1}}"#,
    #"{"hub":"h1","cartVersion":1,"payment":{"method":"card","token":"t"}} x"#,
    #"[]"#,
  ])
  func theFastReadingIsTheStrictReadingOrNothing(json: String) throws {
    let strict: PlaceOrderBody? = try? StrictJSON.decode(PlaceOrderBody.self, from: Data(json.utf8))
    if let fast = PlaceOrderBody.fast(Array(json.utf8)) {
      #expect(fast == strict)
    }
    // The common bodies (the first three) take the fast path.
    let common = [Self.valid, #"{"hub":"h1","cartVersion":0,"payment""#, " {"]
    if common.contains(where: { json.hasPrefix($0) }) {
      #expect(PlaceOrderBody.fast(Array(json.utf8)) != nil)
    }
  }

  @Test func idempotencyKeysMustBePresentAndPrintable() throws {
    #expect(try IdempotencyKey.validate("7f3c-11aa") == "7f3c-11aa")
    #expect(try IdempotencyKey.validate(String(repeating: "a", count: 255)).count == 255)
    for bad: String? in [nil, "", " spaced key", "tab\tkey", String(repeating: "a", count: 256), "ключ"] {
      do {
        _ = try IdempotencyKey.validate(bad)
        Issue.record("accepted \(String(describing: bad))")
      } catch {
        #expect(error.kind == .malformed)
        #expect(error.code == (bad?.isEmpty ?? true ? "idempotencyKeyRequired" : "invalidIdempotencyKey"))
      }
    }
  }
}

@Suite struct SignatureTests {
  @Test func sha256MatchesTheKnownVector() {
    #expect(
      SHA256.hex(Array("abc".utf8)) == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
    #expect(Hex.decode("BA78") == [0xBA, 0x78])
    #expect(Hex.decode("abc") == nil)
    #expect(Hex.decode("zz") == nil)
  }

  @Test func aWebhookSignatureIsCheckedForBodyKeyAndAge() {
    let signer = WebhookSignature(secret: "s3cret", tolerance: 300)
    let body = Array(#"{"type":"payment.succeeded"}"#.utf8)
    let now = Date(timeIntervalSince1970: 1_790_000_000)
    let header = signer.sign(body, for: "pay_1", at: now)
    #expect(header.hasPrefix("t=1790000000,v1="))
    #expect(signer.isValid(header, body: body, for: "pay_1", now: now))
    #expect(signer.isValid(header, body: body, for: "pay_1", now: now + 299))
    #expect(!signer.isValid(header, body: body, for: "pay_1", now: now + 301), "too old: a replayed callback")
    #expect(!signer.isValid(header, body: body + [0x20], for: "pay_1", now: now), "another body")
    #expect(
      !WebhookSignature(secret: "other").isValid(header, body: body, for: "pay_1", now: now), "another key")
    #expect(!signer.isValid(nil, body: body, for: "pay_1", now: now))
    #expect(
      !signer.isValid("v1=" + header.split(separator: "=").last!, body: body, for: "pay_1", now: now),
      "no time")
    #expect(!signer.isValid("t=1790000000,v1=zz", body: body, for: "pay_1", now: now))
    #expect(!signer.isValid(header, body: body, for: "pay_2", now: now), "signed for another payment")
    // Several v1 tags (a key being rotated): one matching is enough.
    #expect(
      signer.isValid(
        "t=1790000000,v1=00," + header.split(separator: ",")[1], body: body, for: "pay_1", now: now))
  }
}
