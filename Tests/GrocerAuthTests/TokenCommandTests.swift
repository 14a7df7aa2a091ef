import Foundation
import GrocerCore
import GrocerRuntime
import Testing

@testable import GrocerAuth

@Suite struct TokenCommandTests {
  private func command(_ arguments: [String]) throws -> TokenCommand {
    guard case .mint(let command) = try TokenCommand.parse(arguments: arguments) else {
      Issue.record("expected a token request")
      return TokenCommand(user: "")
    }
    return command
  }

  private func usageError(_ arguments: [String]) -> String? {
    do {
      _ = try TokenCommand.parse(arguments: arguments)
      return nil
    } catch {
      return error.message
    }
  }

  @Test func aUserAloneIsACustomerForADay() throws {
    #expect(
      try command(["alice"]) == TokenCommand(user: "alice", role: .customer, hubs: [], timeToLive: 86_400))
  }

  @Test func readsRoleHubsAndTTLInEitherSpelling() throws {
    #expect(
      try command(["--role", "staff", "bob", "--hubs", "h1, h2", "--ttl=60"])
        == TokenCommand(user: "bob", role: .staff, hubs: ["h1", "h2"], timeToLive: 60))
    #expect(try command(["s", "--role=staff", "--hubs=*"]).hubs == ["*"])
    #expect(try command(["r7", "--role", "rider"]).role == .rider)
  }

  @Test func asksForHelp() throws {
    #expect(try TokenCommand.parse(arguments: ["--help"]) == .help)
    #expect(try TokenCommand.parse(arguments: ["alice", "-h"]) == .help)
    #expect(TokenCommand.usage.contains("grocer-token <user>"))
  }

  @Test(arguments: [
    [], ["--role", "staff"], ["a", "b"], ["a", "--role"], ["a", "--role", "admin"], ["a", "--ttl", "0"],
    ["a", "--ttl", "-5"], ["a", "--ttl", "soon"], ["a", "--ttl", "999999999999"], ["a", "--hubs", "h1,,h2"],
    ["a", "--hubs", ""], ["a", "--bogus", "1"], ["a", "--role", "staff", "--role", "rider"], ["a", "-x"],
  ])
  func badArgumentsAreUsageErrors(_ arguments: [String]) {
    #expect(usageError(arguments) != nil)
  }

  @Test func mintsATokenTheVerifierAccepts() throws {
    let now = Date(timeIntervalSince1970: 1_790_000_000)
    let minted = try command(["carol", "--role", "staff", "--hubs", "h3", "--ttl", "120"])
    let token = minted.token(settings: Settings(["GROCER_JWT_SECRET": "s3cret"]), now: now)
    let clock = ManualClock(now)
    let verifier = HS256Verifier(secret: "s3cret", clock: clock)
    #expect(try verifier.verify(token) == Principal(subject: "carol", role: .staff, hubs: ["h3"]))
    clock.advance(by: 120 + 30)
    #expect(verificationError(verifier, token) == .expired)
  }

  @Test func usesTheLocalDefaultSecretWhenNoneIsSet() throws {
    let now = Date(timeIntervalSince1970: 1_790_000_000)
    let token = try command(["dave"]).token(settings: Settings([:]), now: now)
    let verifier = HS256Verifier(secret: Settings.localJWTSecret, clock: ManualClock(now))
    #expect(try verifier.verify(token).subject == "dave")
  }
}
