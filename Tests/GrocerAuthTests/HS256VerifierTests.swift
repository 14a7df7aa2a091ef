import Foundation
import GrocerCore
import Testing

@testable import GrocerAuth

@Suite struct HS256VerifierTests {
  // MARK: Known answers (expected strings computed with `openssl dgst -sha256 -hmac`)

  /// jwt.io's example token. Its signature is right for `your-256-bit-secret`, but it has no `exp`,
  /// so verification gets past the signature and stops at the claims.
  @Test func acceptsTheSignatureOfTheJWTIOExampleAndThenAsksForExp() {
    let signingInput =
      "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkpvaG4gRG9lIiwiaWF0IjoxNTE2MjM5MDIyfQ"
    let mac = HMACSHA256(key: Array("your-256-bit-secret".utf8))!
    #expect(
      Base64URL.encode(mac.authenticationCode(for: Array(signingInput.utf8)))
        == "SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c")
    let token = signingInput + ".SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c"
    #expect(
      verificationError(TokenFixtures.verifier(secret: "your-256-bit-secret"), token) == .invalidClaim("exp"))
    #expect(verificationError(TokenFixtures.verifier(secret: "another-secret"), token) == .badSignature)
  }

  @Test func verifiesATokenMadeByAnotherImplementation() throws {
    // {"sub":"u42","role":"staff","hubs":["h1","h7"],"exp":1790003600,"extra":{"nested":[1,2,{"a":null}]}}
    let token =
      "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiJ1NDIiLCJyb2xlIjoic3RhZmYiLCJodWJzIjpbImgxIiwiaDciXSwiZXhwIjoxNzkwMDAzNjAwLCJleHRyYSI6eyJuZXN0ZWQiOlsxLDIseyJhIjpudWxsfV19fQ.j07GIb_XJMecZKae5BxazJR43Fvuyr2q-2YUS1Xmy4o"
    let principal = try TokenFixtures.verifier(secret: "your-256-bit-secret").verify(token)
    #expect(principal == Principal(subject: "u42", role: .staff, hubs: ["h1", "h7"]))
  }

  @Test func signsExactlyWhatAnotherImplementationSigns() {
    let claims = TokenClaims(
      subject: "u1", role: .staff, hubs: ["h1", "*"], issuedAt: TokenFixtures.start,
      expiresAt: TokenFixtures.start.addingTimeInterval(3600), notBefore: TokenFixtures.start)
    #expect(
      HS256Signer(secret: "your-256-bit-secret").sign(claims: claims)
        == "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiJ1MSIsInJvbGUiOiJzdGFmZiIsImh1YnMiOlsiaDEiLCIqIl0sImlhdCI6MTc5MDAwMDAwMCwibmJmIjoxNzkwMDAwMDAwLCJleHAiOjE3OTAwMDM2MDB9.TvGMnmt3T9XdyErlgXBB-BUrTB8daUNarYA0KarwwBc"
    )
  }

  // MARK: Round trips

  @Test func aSignedTokenVerifiesToItsPrincipal() throws {
    let clock = ManualClock(TokenFixtures.start)
    let claims = TokenClaims(
      subject: "rider-7", role: .rider, issuedAt: clock.now(), expiresAt: clock.now().addingTimeInterval(60))
    let token = HS256Signer(secret: TokenFixtures.secret).sign(claims: claims)
    #expect(
      try TokenFixtures.verifier(clock: clock).verify(token) == Principal(subject: "rider-7", role: .rider))
  }

  @Test func staffHubsAreParsedIncludingTheWildcard() throws {
    let verifier = TokenFixtures.verifier()
    let some = try verifier.verify(
      TokenFixtures.token(payload: TokenFixtures.payload(#""role":"staff","hubs":["h1","h2"]"#)))
    #expect(some == Principal(subject: "u1", role: .staff, hubs: ["h1", "h2"]))
    #expect(some.isStaff(of: "h2") && !some.isStaff(of: "h3"))
    let all = try verifier.verify(
      TokenFixtures.token(payload: TokenFixtures.payload(#""role":"staff","hubs":["*"]"#)))
    #expect(all.isStaff(of: "h3"))
  }

  @Test func roleDefaultsToCustomerAndUnknownClaimsAreIgnored() throws {
    let token = TokenFixtures.token(
      payload: TokenFixtures.payload(#""name":"Ann","iat":1,"aud":["x"],"obj":{}"#))
    #expect(try TokenFixtures.verifier().verify(token) == Principal(subject: "u1", role: .customer, hubs: []))
  }

  @Test func acceptsSecretsGivenAsBytes() throws {
    let key: [UInt8] = [0, 1, 2, 0xff, 0x80]
    let token = HS256Signer(secretBytes: key).sign(
      claims: TokenClaims(subject: "u", issuedAt: TokenFixtures.start, expiresAt: TokenFixtures.start + 60))
    let verifier = HS256Verifier(secretBytes: key, clock: ManualClock(TokenFixtures.start))
    #expect(try verifier.verify(token).subject == "u")
  }

  @Test func signsSubjectsThatNeedEscaping() throws {
    let subject = "a\"b\\c\n\u{01}é😀"
    let token = HS256Signer(secret: TokenFixtures.secret).sign(
      claims: TokenClaims(
        subject: subject, issuedAt: TokenFixtures.start, expiresAt: TokenFixtures.start + 60))
    #expect(try TokenFixtures.verifier().verify(token).subject == subject)
  }

  // MARK: Time

  @Test func expiresOnlyOnceTheLeewayIsUsedUp() throws {
    let clock = ManualClock(TokenFixtures.start)
    let verifier = TokenFixtures.verifier(clock: clock)
    let token = TokenFixtures.token(payload: TokenFixtures.payload())  // exp = start + 3600
    clock.advance(by: 3600 + 29)
    #expect(try verifier.verify(token).subject == "u1")
    clock.advance(by: 1)
    #expect(verificationError(verifier, token) == .expired)
    clock.advance(by: 86_400)
    #expect(verificationError(verifier, token) == .expired)
  }

  @Test func aRememberedTokenStillExpiresAndATamperedCopyIsStillRefused() throws {
    let clock = ManualClock(TokenFixtures.start)
    let verifier = TokenFixtures.verifier(clock: clock)
    let token = TokenFixtures.token(payload: TokenFixtures.payload())
    for _ in 0..<3 { #expect(try verifier.verify(token).subject == "u1") }
    var tampered = Array(token.utf8)
    tampered[tampered.count - 2] =
      tampered[tampered.count - 2] == UInt8(ascii: "A") ? UInt8(ascii: "B") : UInt8(ascii: "A")
    #expect(verificationError(verifier, String(decoding: tampered, as: UTF8.self)) == .badSignature)
    clock.advance(by: 3600 + 30)
    #expect(verificationError(verifier, token) == .expired)
  }

  @Test func isNotYetValidBeforeNotBeforeMinusTheLeeway() throws {
    let clock = ManualClock(TokenFixtures.start)
    let verifier = TokenFixtures.verifier(clock: clock)
    let token = TokenFixtures.token(payload: TokenFixtures.payload(#""nbf":1790000100"#))
    #expect(verificationError(verifier, token) == .notYetValid)
    clock.advance(by: 69)
    #expect(verificationError(verifier, token) == .notYetValid)
    clock.advance(by: 1)
    #expect(try verifier.verify(token).subject == "u1")
  }

  @Test func usesTheConfiguredLeeway() {
    let clock = ManualClock(TokenFixtures.start.addingTimeInterval(3600))
    let strict = HS256Verifier(secret: TokenFixtures.secret, clock: clock, leeway: 0)
    #expect(verificationError(strict, TokenFixtures.token(payload: TokenFixtures.payload())) == .expired)
  }

  // MARK: Signatures and algorithms

  @Test func aTokenSignedWithAnotherSecretHasABadSignature() {
    let token = TokenFixtures.token(payload: TokenFixtures.payload(), secret: "someone-elses-secret")
    #expect(verificationError(TokenFixtures.verifier(), token) == .badSignature)
  }

  @Test func aTamperedPayloadHasABadSignature() {
    let token = TokenFixtures.token(payload: TokenFixtures.payload(#""role":"customer""#))
    let parts = token.split(separator: ".")
    let forged =
      parts[0] + "." + Base64URL.encode(TokenFixtures.payload(#""role":"staff","hubs":["*"]"#)) + "."
      + parts[2]
    #expect(verificationError(TokenFixtures.verifier(), String(forged)) == .badSignature)
  }

  @Test func aTruncatedOrEmptySignatureIsBad() {
    let token = TokenFixtures.token(payload: TokenFixtures.payload())
    #expect(verificationError(TokenFixtures.verifier(), String(token.dropLast(3))) == .badSignature)
    let unsigned = token[...token.lastIndex(of: ".")!]
    #expect(verificationError(TokenFixtures.verifier(), String(unsigned)) == .badSignature)
  }

  @Test func algNoneWithAnEmptySignatureIsTheWrongAlgorithm() {
    let token =
      Base64URL.encode(#"{"alg":"none","typ":"JWT"}"#) + "." + Base64URL.encode(TokenFixtures.payload()) + "."
    #expect(verificationError(TokenFixtures.verifier(), token) == .wrongAlgorithm("none"))
  }

  @Test(arguments: ["HS512", "RS256", "hs256", "HS256 ", "ES256"])
  func anyOtherAlgIsTheWrongAlgorithm(_ alg: String) {
    let token = TokenFixtures.token(header: #"{"alg":"\#(alg)"}"#, payload: TokenFixtures.payload())
    #expect(verificationError(TokenFixtures.verifier(), token) == .wrongAlgorithm(alg))
  }

  @Test func aHeaderWithoutAStringAlgOrWithCritIsMalformed() {
    for header in [
      #"{"typ":"JWT"}"#, #"{"alg":null}"#, #"{"alg":["HS256"]}"#, #"{"alg":"HS256","crit":["exp"]}"#,
    ] {
      let token = TokenFixtures.token(header: header, payload: TokenFixtures.payload())
      #expect(verificationError(TokenFixtures.verifier(), token) == .malformed, "\(header)")
    }
  }

  // MARK: Claims

  @Test(arguments: [
    (#"{"exp":1790003600}"#, "sub"),
    (#"{"sub":"","exp":1790003600}"#, "sub"),
    (#"{"sub":42,"exp":1790003600}"#, "sub"),
    (#"{"sub":"u1"}"#, "exp"),
    (#"{"sub":"u1","exp":"1790003600"}"#, "exp"),
    (#"{"sub":"u1","exp":true}"#, "exp"),
    (#"{"sub":"u1","exp":1790003600,"nbf":"soon"}"#, "nbf"),
    (#"{"sub":"u1","exp":1790003600,"role":"admin"}"#, "role"),
    (#"{"sub":"u1","exp":1790003600,"role":"Staff"}"#, "role"),
    (#"{"sub":"u1","exp":1790003600,"role":null}"#, "role"),
    (#"{"sub":"u1","exp":1790003600,"role":"staff","hubs":"h1"}"#, "hubs"),
    (#"{"sub":"u1","exp":1790003600,"role":"staff","hubs":["h1",2]}"#, "hubs"),
    (#"{"sub":"u1","exp":1790003600,"role":"staff","hubs":[""]}"#, "hubs"),
  ])
  func aMissingOrMistypedClaimIsInvalid(_ payload: String, _ claim: String) {
    let token = TokenFixtures.token(payload: payload)
    #expect(verificationError(TokenFixtures.verifier(), token) == .invalidClaim(claim))
  }

  @Test func aSignedPayloadThatIsNotJSONIsMalformed() {
    let token = TokenFixtures.token(payload: "not json")
    #expect(verificationError(TokenFixtures.verifier(), token) == .malformed)
  }

  // MARK: Malformed input

  @Test func malformedTokensAreRefusedAsMalformed() {
    let good = TokenFixtures.token(payload: TokenFixtures.payload())
    let parts = good.split(separator: ".").map(String.init)
    let cases = [
      "",
      ".",
      "..",
      parts[0] + "." + parts[1],
      good + ".",
      good + ".x",
      "." + parts[1] + "." + parts[2],
      parts[0] + ".." + parts[2],
      parts[0] + "=." + parts[1] + "." + parts[2],
      parts[0] + "." + parts[1] + "." + parts[2] + "=",
      "!!!." + parts[1] + "." + parts[2],
      parts[0] + "." + parts[1] + "." + "sig+nature/",
      Base64URL.encode("not json") + "." + parts[1] + "." + parts[2],
      Base64URL.encode("[\"HS256\"]") + "." + parts[1] + "." + parts[2],
      "Bearer " + good,
      good + " ",
      "\u{0}\u{1}\u{2}.\u{ff}.\u{7f}",
      "é.ü.ß",
    ]
    for token in cases {
      #expect(verificationError(TokenFixtures.verifier(), token) == .malformed, "\(token)")
    }
  }

  @Test func hugeTokensAreMalformedWithoutBeingRead() {
    let verifier = TokenFixtures.verifier()
    let padding = String(repeating: "A", count: 100 * 1024)
    let hundredKB = TokenFixtures.token(payload: TokenFixtures.payload(#""pad":"\#(padding)""#))
    #expect(verificationError(verifier, hundredKB) == .malformed)
    #expect(verificationError(verifier, String(repeating: "a.", count: 512 * 1024)) == .malformed)
    let random = String(
      decoding: (0..<(1 << 20)).map { UInt8(truncatingIfNeeded: $0 &* 7919) }, as: UTF8.self)
    #expect(verificationError(verifier, random) == .malformed)
  }

  @Test func randomBytesNeverCrash() {
    var generator = SystemRandomNumberGenerator()
    let verifier = TokenFixtures.verifier()
    for _ in 0..<2000 {
      let length = Int.random(in: 0..<300, using: &generator)
      let bytes = (0..<length).map { _ in UInt8.random(in: 0...255, using: &generator) }
      let result = verificationError(verifier, String(decoding: bytes, as: UTF8.self))
      #expect(result != nil)
    }
  }
}

@Suite struct HS256VerifierConcurrencyTests {
  /// One verifier (and its shared libcrypto template context) serves many threads at once.
  @Test func oneVerifierServesManyTasksAtOnce() async throws {
    let verifier = TokenFixtures.verifier()
    let good = TokenFixtures.token(payload: TokenFixtures.payload())
    let bad = TokenFixtures.token(payload: TokenFixtures.payload(), secret: "other")
    let results = await withTaskGroup(of: Bool.self) { group in
      for task in 0..<8 {
        group.addTask {
          (0..<500).allSatisfy { round in
            (task + round).isMultiple(of: 2)
              ? (try? verifier.verify(good).subject) == "u1"
              : verificationError(verifier, bad) == .badSignature
          }
        }
      }
      return await group.reduce(into: [Bool]()) { $0.append($1) }
    }
    #expect(results == Array(repeating: true, count: 8))
  }
}
