import Foundation
import GrocerCore
import Synchronization

/// Checks provider authentication tokens the way APNs does, for the APNs simulator.
///
/// A request passes when its `authorization` header is `bearer <JWT>` and the JWT's header says
/// `"alg":"ES256"` and a known `kid`, its ES256 signature verifies with that key's public key, its
/// `iss` is the team id, and its `iat` is at most an hour old and not in the future beyond
/// `allowedClockSkew`. Answers, as APNs gives them: no header or no token → 403
/// `MissingProviderToken`; any other fault → 403 `InvalidProviderToken`, except an `iat` older than
/// an hour → 403 `ExpiredProviderToken`. With `minimumUpdateInterval` set, a provider that moves
/// to a newer token sooner than that after its previous one gets 429 `TooManyProviderTokenUpdates`.
///
/// A token that passed is remembered by its text, so the token every request carries is parsed and
/// its signature checked once; its age is still checked on every request.
public final class APNsProviderTokenVerifier: Sendable {
  /// What `check` decided.
  public enum Outcome: Hashable, Sendable {
    /// The token is good: signed by the key `keyID`, issued at `issuedAt`.
    case accepted(keyID: String, issuedAt: Date)
    /// The request must be answered with `rejection.status` and `rejection.reason`.
    case rejected(Rejection)
  }

  /// A refusal, as APNs words it.
  public enum Rejection: String, Hashable, Sendable {
    case missingProviderToken = "MissingProviderToken"
    case invalidProviderToken = "InvalidProviderToken"
    case expiredProviderToken = "ExpiredProviderToken"
    case tooManyProviderTokenUpdates = "TooManyProviderTokenUpdates"

    /// The HTTP status APNs answers with.
    public var status: Int { self == .tooManyProviderTokenUpdates ? 429 : 403 }
    /// The `reason` in APNs's JSON body.
    public var reason: String { rawValue }
  }

  /// APNs refuses a token whose `iat` is older than this.
  public static let maximumTokenAge: TimeInterval = 60 * 60
  /// Longer headers are refused unread; a real token is about 200 bytes.
  static let maximumTokenLength = 2048
  /// Past this many remembered tokens the memory starts over.
  static let rememberedCapacity = 1024

  private let keys: [String: ES256PublicKey]
  private let teamID: String
  private let clock: any WallClock
  private let allowedClockSkew: TimeInterval
  private let minimumUpdateInterval: TimeInterval?
  private let state = Mutex(State())

  private struct Verified: Sendable {
    var keyID: String
    var issuedAt: TimeInterval
  }

  /// The newest token seen for one key, and when it was first seen.
  private struct Latest: Sendable {
    var token: String
    var issuedAt: TimeInterval
    var firstSeen: Date
  }

  private struct State: Sendable {
    var verified: [String: Verified] = [:]
    var latestByKey: [String: Latest] = [:]
  }

  /// - Parameters:
  ///   - keys: the public keys the simulated provider account holds, by key id (`kid`).
  ///   - teamID: the team id every token's `iss` must name.
  ///   - allowedClockSkew: how far in the future an `iat` may be before the token is invalid.
  ///   - minimumUpdateInterval: if set (APNs: 20 minutes), refuse a newer token presented sooner
  ///     than this after the previous one was first seen, per key. Off by default, because APNs
  ///     counts per connection and several providers (or test cases) may share one simulator.
  public init(
    keys: [String: ES256PublicKey], teamID: String, clock: any WallClock, allowedClockSkew: TimeInterval = 60,
    minimumUpdateInterval: TimeInterval? = nil
  ) {
    self.keys = keys
    self.teamID = teamID
    self.clock = clock
    self.allowedClockSkew = allowedClockSkew
    self.minimumUpdateInterval = minimumUpdateInterval
  }

  /// Judges the value of a request's `authorization` header (nil when the header is absent).
  public func check(authorizationHeader: String?) -> Outcome {
    guard let header = authorizationHeader, !header.isEmpty else { return .rejected(.missingProviderToken) }
    guard let token = Self.bearerToken(header) else { return .rejected(.invalidProviderToken) }
    guard !token.isEmpty else { return .rejected(.missingProviderToken) }
    let now = clock.now()
    let remembered = state.withLock { $0.verified[token] }
    let verified: Verified
    if let remembered {
      verified = remembered
    } else {
      guard let fresh = verify(token) else { return .rejected(.invalidProviderToken) }
      verified = fresh
    }
    let age = now.timeIntervalSince1970 - verified.issuedAt
    if age > Self.maximumTokenAge { return .rejected(.expiredProviderToken) }
    if -age > allowedClockSkew { return .rejected(.invalidProviderToken) }
    let tooSoon = state.withLock { state -> Bool in
      if remembered == nil {
        if state.verified.count >= Self.rememberedCapacity { state.verified.removeAll(keepingCapacity: true) }
        state.verified[token] = verified
      }
      return isTooSoonAnUpdate(token, verified, now: now, state: &state)
    }
    if tooSoon { return .rejected(.tooManyProviderTokenUpdates) }
    return .accepted(keyID: verified.keyID, issuedAt: Date(timeIntervalSince1970: verified.issuedAt))
  }

  /// Tracks the newest token per key; true when `token` replaces it sooner than allowed.
  private func isTooSoonAnUpdate(_ token: String, _ verified: Verified, now: Date, state: inout State) -> Bool
  {
    guard let minimumUpdateInterval else { return false }
    guard let latest = state.latestByKey[verified.keyID] else {
      state.latestByKey[verified.keyID] = Latest(token: token, issuedAt: verified.issuedAt, firstSeen: now)
      return false
    }
    // The same token, or an older one still in flight, is no update.
    if latest.token == token || verified.issuedAt < latest.issuedAt { return false }
    if now.timeIntervalSince(latest.firstSeen) < minimumUpdateInterval { return true }
    state.latestByKey[verified.keyID] = Latest(token: token, issuedAt: verified.issuedAt, firstSeen: now)
    return false
  }

  /// The token after `bearer ` (scheme matched case-insensitively), or nil for another scheme.
  private static func bearerToken(_ header: String) -> String? {
    let scheme = "bearer "
    guard header.utf8.count <= maximumTokenLength + scheme.utf8.count,
      header.utf8.count >= scheme.utf8.count,
      header.prefix(scheme.count).lowercased() == scheme
    else { return nil }
    return String(header.dropFirst(scheme.count))
  }

  /// The key id and `iat` of `token` if its header, signature and issuer are right.
  private func verify(_ token: String) -> Verified? {
    guard let parts = JWTParts(token, maximumLength: Self.maximumTokenLength),
      let header = JWTJSON.parseObject(parts.header),
      case .string("ES256") = header["alg"],
      header["crit"] == nil,
      case .string(let keyID) = header["kid"],
      let key = keys[keyID],
      key.verify(signature: parts.signature, message: parts.signingInput),
      let claims = JWTJSON.parseObject(parts.payload),
      case .string(teamID) = claims["iss"],
      case .number(let issuedAt) = claims["iat"],
      issuedAt.isFinite, issuedAt == issuedAt.rounded(), issuedAt >= 0
    else { return nil }
    return Verified(keyID: keyID, issuedAt: issuedAt)
  }
}
