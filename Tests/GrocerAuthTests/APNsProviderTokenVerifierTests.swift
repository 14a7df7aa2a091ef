import Foundation
import GrocerCore
import Testing

@testable import GrocerAuth

@Suite struct APNsProviderTokenVerifierTests {
  private let key: ES256Key
  private let otherKey: ES256Key
  private let clock = ManualClock(ES256Fixtures.start)

  init() throws {
    key = try ES256Key.generate()
    otherKey = try ES256Key.generate()
  }

  private func verifier(minimumUpdateInterval: TimeInterval? = nil) -> APNsProviderTokenVerifier {
    APNsProviderTokenVerifier(
      keys: [ES256Fixtures.keyID: key.publicKey, "OTHERKEY01": otherKey.publicKey],
      teamID: ES256Fixtures.teamID, clock: clock, minimumUpdateInterval: minimumUpdateInterval)
  }

  private func bearer(
    header: String = ES256Fixtures.appleHeader(), claims: String = ES256Fixtures.appleClaims(),
    key: ES256Key? = nil
  ) -> String {
    "bearer " + ES256Fixtures.token(header: header, payload: claims, key: key ?? self.key)
  }

  private let invalid = APNsProviderTokenVerifier.Outcome.rejected(.invalidProviderToken)

  @Test func acceptsAGoodToken() {
    #expect(
      verifier().check(authorizationHeader: bearer())
        == .accepted(keyID: ES256Fixtures.keyID, issuedAt: ES256Fixtures.start))
    #expect(
      verifier().check(authorizationHeader: "Bearer " + bearer().dropFirst(7))
        == .accepted(keyID: ES256Fixtures.keyID, issuedAt: ES256Fixtures.start))
  }

  @Test func aTokenExpiresAnHourAfterItsIat() {
    let verifier = verifier()
    let header = bearer()
    #expect(verifier.check(authorizationHeader: header) != invalid)
    clock.advance(by: 3600)
    #expect(
      verifier.check(authorizationHeader: header)
        == .accepted(keyID: ES256Fixtures.keyID, issuedAt: ES256Fixtures.start))
    clock.advance(by: 1)
    // Remembered from the first check, and still judged by its age.
    #expect(verifier.check(authorizationHeader: header) == .rejected(.expiredProviderToken))
    // Seen for the first time when already too old.
    #expect(
      verifier.check(
        authorizationHeader: bearer(
          claims: ES256Fixtures.appleClaims(iat: ES256Fixtures.start.addingTimeInterval(-1))))
        == .rejected(.expiredProviderToken))
  }

  @Test func aTokenFromTheFutureIsInvalidBeyondTheSkew() {
    let soon = bearer(claims: ES256Fixtures.appleClaims(iat: ES256Fixtures.start.addingTimeInterval(60)))
    let later = bearer(claims: ES256Fixtures.appleClaims(iat: ES256Fixtures.start.addingTimeInterval(61)))
    #expect(verifier().check(authorizationHeader: soon) != invalid)
    #expect(verifier().check(authorizationHeader: later) == invalid)
  }

  @Test func aTokenSignedByAnotherKeyIsInvalid() {
    #expect(verifier().check(authorizationHeader: bearer(key: otherKey)) == invalid)
    // The same token with the kid of the key that did sign it is fine.
    #expect(
      verifier().check(
        authorizationHeader: bearer(header: ES256Fixtures.appleHeader(kid: "OTHERKEY01"), key: otherKey))
        == .accepted(keyID: "OTHERKEY01", issuedAt: ES256Fixtures.start))
  }

  @Test func anUnknownKidOrAWrongIssuerIsInvalid() {
    #expect(
      verifier().check(authorizationHeader: bearer(header: ES256Fixtures.appleHeader(kid: "UNKNOWN001")))
        == invalid)
    #expect(verifier().check(authorizationHeader: bearer(header: #"{"alg":"ES256"}"#)) == invalid)
    #expect(
      verifier().check(authorizationHeader: bearer(claims: ES256Fixtures.appleClaims(iss: "ZZZ123GHIJ")))
        == invalid)
    #expect(verifier().check(authorizationHeader: bearer(claims: #"{"iat":1790000000}"#)) == invalid)
  }

  @Test func anIatThatIsNotWholeSecondsIsInvalid() {
    for claims in [
      #"{"iss":"DEF123GHIJ"}"#, #"{"iss":"DEF123GHIJ","iat":"1790000000"}"#,
      #"{"iss":"DEF123GHIJ","iat":1790000000.5}"#, #"{"iss":"DEF123GHIJ","iat":-1}"#,
    ] {
      #expect(verifier().check(authorizationHeader: bearer(claims: claims)) == invalid, "\(claims)")
    }
  }

  @Test func algNoneIsInvalid() throws {
    let header = Base64URL.encode(#"{"alg":"none","kid":"ABC123DEFG"}"#)
    let claims = Base64URL.encode(ES256Fixtures.appleClaims())
    #expect(verifier().check(authorizationHeader: "bearer \(header).\(claims).") == invalid)
    // Even carrying a signature that is right for those bytes.
    let signature = Base64URL.encode(key.sign(Array("\(header).\(claims)".utf8)))
    #expect(verifier().check(authorizationHeader: "bearer \(header).\(claims).\(signature)") == invalid)
  }

  /// The classic algorithm confusion: an HS256 token whose HMAC key is the public key's PEM.
  @Test func anHS256TokenIsInvalid() {
    let secret = key.publicKey.pemRepresentation
    let token = TokenFixtures.token(
      header: #"{"alg":"HS256","kid":"ABC123DEFG"}"#, payload: ES256Fixtures.appleClaims(), secret: secret)
    #expect(verifier().check(authorizationHeader: "bearer " + token) == invalid)
  }

  @Test func tamperingMakesATokenInvalid() throws {
    let token = ES256Fixtures.token(
      header: ES256Fixtures.appleHeader(), payload: ES256Fixtures.appleClaims(), key: key)
    let parts = token.split(separator: ".").map(String.init)
    // Newer claims under the old signature.
    let newer = Base64URL.encode(ES256Fixtures.appleClaims(iat: ES256Fixtures.start.addingTimeInterval(600)))
    #expect(verifier().check(authorizationHeader: "bearer \(parts[0]).\(newer).\(parts[2])") == invalid)
    // One bit of the signature flipped.
    var signature = try #require(Base64URL.decode(parts[2]))
    signature[10] ^= 0x04
    #expect(
      verifier().check(authorizationHeader: "bearer \(parts[0]).\(parts[1]).\(Base64URL.encode(signature))")
        == invalid)
    // The right signature, in the DER form libcrypto makes.
    let der = ES256Fixtures.derSignature(raw: try #require(Base64URL.decode(parts[2])))
    #expect(
      verifier().check(authorizationHeader: "bearer \(parts[0]).\(parts[1]).\(Base64URL.encode(der))")
        == invalid)
  }

  @Test func garbageIsInvalidAndNothingIsMissing() {
    for header in [
      "bearer garbage", "bearer a.b.c", "bearer ...", "Basic QUJDOkRFRg==", "bearer", "token",
      "bearer  " + bearer().dropFirst(7), bearer() + " ", "bearer " + String(repeating: "A", count: 5000),
    ] {
      #expect(verifier().check(authorizationHeader: header) == invalid, "\(header.prefix(40))")
    }
    #expect(verifier().check(authorizationHeader: nil) == .rejected(.missingProviderToken))
    #expect(verifier().check(authorizationHeader: "") == .rejected(.missingProviderToken))
    #expect(verifier().check(authorizationHeader: "bearer ") == .rejected(.missingProviderToken))
  }

  @Test func rejectionsCarryAPNsStatusAndReason() {
    typealias Rejection = APNsProviderTokenVerifier.Rejection
    #expect(Rejection.invalidProviderToken.status == 403)
    #expect(Rejection.invalidProviderToken.reason == "InvalidProviderToken")
    #expect(Rejection.expiredProviderToken.status == 403)
    #expect(Rejection.expiredProviderToken.reason == "ExpiredProviderToken")
    #expect(Rejection.missingProviderToken.status == 403)
    #expect(Rejection.tooManyProviderTokenUpdates.status == 429)
    #expect(Rejection.tooManyProviderTokenUpdates.reason == "TooManyProviderTokenUpdates")
  }

  @Test func aNewerTokenWithinTwentyMinutesIsTooManyUpdatesWhenThatIsChecked() {
    let verifier = verifier(minimumUpdateInterval: 20 * 60)
    let first = bearer()
    #expect(verifier.check(authorizationHeader: first) != invalid)
    clock.advance(by: 5 * 60)
    let early = bearer(claims: ES256Fixtures.appleClaims(iat: clock.now()))
    #expect(verifier.check(authorizationHeader: early) == .rejected(.tooManyProviderTokenUpdates))
    #expect(
      verifier.check(authorizationHeader: first)
        == .accepted(keyID: ES256Fixtures.keyID, issuedAt: ES256Fixtures.start))
    clock.advance(by: 15 * 60)
    let onTime = bearer(claims: ES256Fixtures.appleClaims(iat: clock.now()))
    #expect(
      verifier.check(authorizationHeader: onTime)
        == .accepted(keyID: ES256Fixtures.keyID, issuedAt: clock.now()))
    // A request still carrying the previous token is not an update.
    #expect(verifier.check(authorizationHeader: first) != .rejected(.tooManyProviderTokenUpdates))
    // Without the check, updates are never counted.
    let lenient = self.verifier()
    #expect(lenient.check(authorizationHeader: first) != invalid)
    #expect(lenient.check(authorizationHeader: early) != .rejected(.tooManyProviderTokenUpdates))
  }
}
