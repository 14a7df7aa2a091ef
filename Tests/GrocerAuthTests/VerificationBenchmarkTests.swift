import Foundation
import GrocerCore
import Testing

@testable import GrocerAuth

/// Verification runs on every authenticated request; this prints what it costs (no assertion:
/// the number depends on the machine and on debug/release builds).
@Suite struct VerificationBenchmarkTests {
  @Test func verifiesTheSameTokenRepeatedlyAndPrintsItsCost() throws {
    let clock = ManualClock(TokenFixtures.start)
    let token = HS256Signer(secret: TokenFixtures.secret).sign(
      claims: TokenClaims(
        subject: "user-1234567", role: .staff, hubs: ["h1", "h2"], issuedAt: clock.now(),
        expiresAt: clock.now().addingTimeInterval(86_400)))
    let verifier = HS256Verifier(secret: TokenFixtures.secret, clock: clock)
    // A few thousand: enough to see the cost; timing targets belong in `make bench`.
    let iterations = 5_000
    var accepted = 0
    let started = ContinuousClock.now
    for _ in 0..<iterations where try verifier.verify(token).role == .staff {
      accepted += 1
    }
    let elapsed = ContinuousClock.now - started
    #expect(accepted == iterations)
    let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
    print(
      "HS256Verifier: \(iterations) verifications of a \(token.utf8.count)-byte token in "
        + String(format: "%.3f s (%.2f µs each)", seconds, seconds / Double(iterations) * 1e6))
  }
}
