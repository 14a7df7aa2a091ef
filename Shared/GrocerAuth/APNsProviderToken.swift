import Foundation
import GrocerCore
import Synchronization

/// Why an `APNsProviderToken` could not be set up.
public enum APNsProviderTokenError: Error, Hashable, Sendable, CustomStringConvertible {
  /// The key id is not the 10 letters and digits Apple shows next to the key.
  case invalidKeyID(String)
  /// The team id is not the 10 letters and digits of an Apple developer team.
  case invalidTeamID(String)

  public var description: String {
    switch self {
    case .invalidKeyID(let id): "APNs key id \"\(id)\" is not 10 letters and digits"
    case .invalidTeamID(let id): "APNs team id \"\(id)\" is not 10 letters and digits"
    }
  }
}

/// The provider authentication token APNs wants in `authorization: bearer <token>`: an ES256 JWT
/// with header `{"alg":"ES256","kid":<key id>}` and claims `{"iss":<team id>,"iat":<seconds>}`,
/// signed with the `.p8` key Apple issued.
///
/// Apple's rules shape it: a token older than an hour is refused (403 `ExpiredProviderToken`), and
/// a provider that changes tokens more often than every 20 minutes is refused too (429
/// `TooManyProviderTokenUpdates`). So one token is cached and shared by every request; `current()`
/// mints a new one once the cached one reaches `refreshAge` (50 minutes by default, kept within
/// 20…60), and `invalidate()` drops it early only if it is at least 20 minutes old.
///
/// Thread-safe: one lock guards the cached token, and a new token is minted under it, so callers
/// racing at the refresh moment all get the same new token.
public final class APNsProviderToken: Sendable {
  /// APNs refuses token updates more frequent than this.
  public static let minimumRefreshAge: TimeInterval = 20 * 60
  /// APNs refuses tokens older than this.
  public static let maximumRefreshAge: TimeInterval = 60 * 60
  /// Late enough to stay well clear of the 20-minute floor, early enough that a token never
  /// reaches APNs's one-hour limit in flight or through modest clock skew.
  public static let defaultRefreshAge: TimeInterval = 50 * 60

  /// The 10-character key id (`kid`).
  public let keyID: String
  /// The 10-character team id (`iss`).
  public let teamID: String
  /// The age at which `current()` replaces the cached token, within 20…60 minutes.
  public let refreshAge: TimeInterval

  private let key: ES256Key
  private let clock: any WallClock
  private let encodedHeader: String
  private let cached = Mutex<Minted?>(nil)

  private struct Minted: Sendable {
    var token: String
    var issuedAt: Date
  }

  /// - Parameters:
  ///   - key: the token-signing key (Apple's `.p8`).
  ///   - keyID: the key's 10-character id.
  ///   - teamID: the developer team's 10-character id.
  ///   - refreshAge: when to replace a token; clamped to 20…60 minutes.
  public init(
    key: ES256Key, keyID: String, teamID: String, clock: any WallClock,
    refreshAge: TimeInterval = defaultRefreshAge
  ) throws(APNsProviderTokenError) {
    guard Self.isAppleIdentifier(keyID) else { throw .invalidKeyID(keyID) }
    guard Self.isAppleIdentifier(teamID) else { throw .invalidTeamID(teamID) }
    self.key = key
    self.keyID = keyID
    self.teamID = teamID
    self.clock = clock
    self.refreshAge = min(max(refreshAge, Self.minimumRefreshAge), Self.maximumRefreshAge)
    // The ids are letters and digits only, so they need no JSON escaping.
    encodedHeader = Base64URL.encode(#"{"alg":"ES256","kid":""# + keyID + #""}"#)
  }

  /// The token to send now: the cached one, or a new one when the cached one has reached
  /// `refreshAge` (or carries an `iat` more than a minute in the future, after the clock was set back).
  public func current() -> String {
    cached.withLock { cached in
      let now = clock.now()
      if let minted = cached {
        let age = now.timeIntervalSince(minted.issuedAt)
        if age < refreshAge && age > -60 { return minted.token }
      }
      let minted = mint(at: now)
      cached = minted
      return minted.token
    }
  }

  /// The value of the `authorization` header: `bearer <current token>`.
  public func authorizationHeaderValue() -> String { "bearer " + current() }

  /// When the cached token was issued (its `iat`), or nil before the first `current()`.
  public var issuedAt: Date? { cached.withLock { $0?.issuedAt } }

  /// Asks for a new token on the next `current()`, after APNs answered 403 `ExpiredProviderToken`.
  /// Honoured only when the cached token is at least 20 minutes old: replacing a younger one
  /// would earn 429 `TooManyProviderTokenUpdates`, and many requests failing at once with the same
  /// token must cause one refresh, not one each.
  ///
  /// - Returns: whether the next `current()` mints a new token.
  @discardableResult
  public func invalidate() -> Bool {
    cached.withLock { cached in
      guard let minted = cached else { return true }
      guard clock.now().timeIntervalSince(minted.issuedAt) >= Self.minimumRefreshAge else { return false }
      cached = nil
      return true
    }
  }

  private func mint(at now: Date) -> Minted {
    // `iat` is whole seconds; the age is measured from it, as APNs measures it.
    let issuedAt = Int(now.timeIntervalSince1970.rounded(.down))
    let claims = #"{"iss":""# + teamID + #"","iat":"# + String(issuedAt) + "}"
    let signingInput = encodedHeader + "." + Base64URL.encode(claims)
    let signature = key.sign(Array(signingInput.utf8))
    return Minted(
      token: signingInput + "." + Base64URL.encode(signature),
      issuedAt: Date(timeIntervalSince1970: TimeInterval(issuedAt)))
  }

  /// Apple's key and team ids: exactly 10 ASCII letters and digits.
  static func isAppleIdentifier(_ id: String) -> Bool {
    id.utf8.count == 10
      && id.utf8.allSatisfy { byte in
        (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte)
          || (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte)
          || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte)
      }
  }
}
