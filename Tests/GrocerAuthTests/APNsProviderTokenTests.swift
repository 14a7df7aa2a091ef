import Foundation
import GrocerCore
import Testing

@testable import GrocerAuth

@Suite struct APNsProviderTokenTests {
  private let key: ES256Key
  private let clock = ManualClock(ES256Fixtures.start)

  init() throws {
    key = try ES256Key.generate()
  }

  private func provider(refreshAge: TimeInterval = APNsProviderToken.defaultRefreshAge) throws
    -> APNsProviderToken
  {
    try APNsProviderToken(
      key: key, keyID: ES256Fixtures.keyID, teamID: ES256Fixtures.teamID, clock: clock, refreshAge: refreshAge
    )
  }

  @Test func theTokenIsTheJWTAppleDescribes() throws {
    let provider = try provider()
    let token = provider.current()
    let parts = try #require(ES256Fixtures.decodedParts(token))
    #expect(parts.header == #"{"alg":"ES256","kid":"ABC123DEFG"}"#)
    #expect(parts.claims == #"{"iss":"DEF123GHIJ","iat":1790000000}"#)
    #expect(parts.signature.count == 64)
    #expect(key.publicKey.verify(signature: parts.signature, message: ES256Fixtures.signingInput(of: token)))
    #expect(provider.authorizationHeaderValue() == "bearer " + token)
    #expect(provider.issuedAt == ES256Fixtures.start)
  }

  @Test func iatIsWholeSecondsRoundedDown() throws {
    clock.advance(by: 0.75)
    let parts = try #require(ES256Fixtures.decodedParts(try provider().current()))
    #expect(parts.claims == #"{"iss":"DEF123GHIJ","iat":1790000000}"#)
  }

  @Test func aTamperedTokenNoLongerVerifies() throws {
    let token = try provider().current()
    let parts = try #require(ES256Fixtures.decodedParts(token))
    let forgedClaims = #"{"iss":"DEF123GHIJ","iat":1790009999}"#
    let forgedInput =
      Base64URL.encode(#"{"alg":"ES256","kid":"ABC123DEFG"}"#) + "." + Base64URL.encode(forgedClaims)
    #expect(!key.publicKey.verify(signature: parts.signature, message: Array(forgedInput.utf8)))
  }

  @Test func keepsOneTokenUntilItIsFiftyMinutesOld() throws {
    let provider = try provider()
    let first = provider.current()
    clock.advance(by: 20 * 60)
    #expect(provider.current() == first)
    clock.advance(by: 30 * 60 - 1)
    #expect(provider.current() == first)
    clock.advance(by: 1)
    let second = provider.current()
    #expect(second != first)
    #expect(provider.issuedAt == ES256Fixtures.start.addingTimeInterval(50 * 60))
    #expect(ES256Fixtures.decodedParts(second)?.claims == #"{"iss":"DEF123GHIJ","iat":1790003000}"#)
    clock.advance(by: 49 * 60)
    #expect(provider.current() == second)
  }

  @Test func theRefreshAgeIsKeptBetweenTwentyAndSixtyMinutes() throws {
    #expect(try provider(refreshAge: 60).refreshAge == 20 * 60)
    #expect(try provider(refreshAge: 3 * 3600).refreshAge == 60 * 60)
    let provider = try provider(refreshAge: 30 * 60)
    #expect(provider.refreshAge == 30 * 60)
    let first = provider.current()
    clock.advance(by: 30 * 60 - 1)
    #expect(provider.current() == first)
    clock.advance(by: 1)
    #expect(provider.current() != first)
  }

  @Test func invalidateIsRefusedForATokenYoungerThanTwentyMinutes() throws {
    let provider = try provider()
    let first = provider.current()
    clock.advance(by: 20 * 60 - 1)
    #expect(!provider.invalidate())
    #expect(provider.current() == first)
    clock.advance(by: 1)
    #expect(provider.invalidate())
    let second = provider.current()
    #expect(second != first)
    #expect(provider.issuedAt == clock.now())
    // A burst of 403s for the old token right after the refresh changes nothing.
    #expect(!provider.invalidate())
    #expect(provider.current() == second)
  }

  @Test func invalidateBeforeTheFirstTokenIsHarmless() throws {
    let provider = try provider()
    #expect(provider.invalidate())
    #expect(provider.issuedAt == nil)
    _ = provider.current()
    #expect(provider.issuedAt == ES256Fixtures.start)
  }

  @Test func aClockSetBackMintsATokenThatIsNotFromTheFuture() throws {
    let provider = try provider()
    let first = provider.current()
    clock.advance(by: -30)
    #expect(provider.current() == first)
    clock.advance(by: -3600)
    #expect(provider.current() != first)
    #expect(provider.issuedAt == clock.now())
  }

  @Test func callersRacingAtTheRefreshMomentShareOneNewToken() async throws {
    let provider = try provider()
    let first = provider.current()
    clock.advance(by: 50 * 60)
    let tokens = await withTaskGroup(of: String.self) { group in
      for _ in 0..<16 { group.addTask { provider.current() } }
      return await group.reduce(into: Set<String>()) { $0.insert($1) }
    }
    #expect(tokens.count == 1)
    #expect(tokens.first != first)
  }

  @Test func refusesIdsThatAreNotTenLettersAndDigits() {
    #expect(throws: APNsProviderTokenError.invalidKeyID("ABC123")) {
      try APNsProviderToken(key: key, keyID: "ABC123", teamID: ES256Fixtures.teamID, clock: clock)
    }
    #expect(throws: APNsProviderTokenError.invalidTeamID("DEF123GHI\"")) {
      try APNsProviderToken(key: key, keyID: ES256Fixtures.keyID, teamID: "DEF123GHI\"", clock: clock)
    }
  }

  /// Three hours of requests, one a minute: every token the provider hands out is accepted by a
  /// verifier that enforces both of Apple's limits (an hour's age, 20 minutes between updates).
  @Test func everyTokenOverThreeHoursPassesAPNsRules() throws {
    let provider = try provider()
    let verifier = APNsProviderTokenVerifier(
      keys: [ES256Fixtures.keyID: key.publicKey], teamID: ES256Fixtures.teamID, clock: clock,
      minimumUpdateInterval: APNsProviderToken.minimumRefreshAge)
    var distinct = Set<String>()
    for _ in 0..<180 {
      let header = provider.authorizationHeaderValue()
      distinct.insert(header)
      guard case .accepted(let keyID, _) = verifier.check(authorizationHeader: header) else {
        Issue.record("token refused at \(clock.now())")
        return
      }
      #expect(keyID == ES256Fixtures.keyID)
      clock.advance(by: 60)
    }
    #expect(distinct.count == 4)  // minted at 0, 50, 100 and 150 minutes
  }
}
