import Foundation
import GrocerCore
import Synchronization

/// The JWS algorithms a verifier can be configured for.
///
/// Only HS256 exists today; the type makes "what `alg` must say" an explicit, checked setting
/// rather than whatever the token claims (the classic `alg: none` / algorithm-confusion hole).
public enum JWTAlgorithm: String, Hashable, Sendable {
  case hs256 = "HS256"
}

/// Verifies HS256 JSON Web Tokens (RFC 7519) signed with a shared secret and turns them into a
/// `Principal`.
///
/// Checks, in order: length and shape (→ `.malformed`), header `alg` equals the configured
/// algorithm (→ `.wrongAlgorithm`), the HMAC-SHA256 signature compared in constant time
/// (→ `.badSignature`), then the claims, read only once the signature is good: `exp` required,
/// `nbf` optional, both with `leeway` against the injected clock (→ `.expired`, `.notYetValid`);
/// `sub` a non-empty string; `role` one of `customer` (default), `staff`, `rider`; `hubs` an array
/// of strings (→ `.invalidClaim`). Unknown claims are ignored.
///
/// A token that passed is remembered (by its whole text, with its `exp`/`nbf`), so the token an
/// app sends with every request is parsed and MACed once; its times are still checked on every
/// use, so a remembered token expires exactly like a new one.
public struct HS256Verifier: TokenVerifier {
  /// Longer tokens are refused before any work; ours are a few hundred bytes.
  public static let maximumTokenLength = 8 * 1024

  private let mac: HMACSHA256
  private let clock: any WallClock
  private let leeway: TimeInterval
  private let algorithm: JWTAlgorithm
  private let verified = VerifiedTokens()

  /// - Parameters:
  ///   - secret: the shared secret (its UTF-8 bytes are the HMAC key). Must not be empty.
  ///   - leeway: how far `exp` and `nbf` may be off, for clock skew between machines.
  public init(
    secret: String, clock: any WallClock, leeway: TimeInterval = 30, expectedAlgorithm: JWTAlgorithm = .hs256
  ) {
    self.init(
      secretBytes: Array(secret.utf8), clock: clock, leeway: leeway, expectedAlgorithm: expectedAlgorithm)
  }

  /// - Precondition: `secretBytes` is not empty (an empty key would let anyone mint tokens).
  public init(
    secretBytes: [UInt8], clock: any WallClock, leeway: TimeInterval = 30,
    expectedAlgorithm: JWTAlgorithm = .hs256
  ) {
    precondition(!secretBytes.isEmpty, "an HS256 secret must not be empty")
    guard let mac = HMACSHA256(key: secretBytes) else { fatalError("libcrypto provides no HMAC-SHA256") }
    self.mac = mac
    self.clock = clock
    self.leeway = leeway
    self.algorithm = expectedAlgorithm
  }

  public func verify(_ token: String) throws(TokenError) -> Principal {
    if let known = verified.lookup(token) {
      try checkTimes(expiresAt: known.expiresAt, notBefore: known.notBefore)
      return known.principal
    }
    guard let parts = JWTParts(token, maximumLength: Self.maximumTokenLength),
      let header = JWTJSON.parseObject(parts.header)
    else { throw .malformed }
    guard case .string(let alg) = header["alg"] else { throw .malformed }
    guard alg == algorithm.rawValue else { throw .wrongAlgorithm(alg) }
    // RFC 7515 §4.1.11: extensions listed in `crit` must be understood; we understand none.
    guard header["crit"] == nil else { throw .malformed }

    let expected = mac.authenticationCode(for: parts.signingInput)
    let signatureMatches = parts.signature.withUnsafeBytes { HMACSHA256.tagsMatch(expected, $0) }
    guard signatureMatches else { throw .badSignature }

    guard let claims = JWTJSON.parseObject(parts.payload) else { throw .malformed }
    guard case .number(let expiresAt) = claims["exp"] else { throw .invalidClaim("exp") }
    var notBefore: Double?
    switch claims["nbf"] {
    case nil: break
    case .number(let value): notBefore = value
    default: throw .invalidClaim("nbf")
    }
    try checkTimes(expiresAt: expiresAt, notBefore: notBefore)
    let principal = try principal(from: claims)
    verified.insert(token, .init(principal: principal, expiresAt: expiresAt, notBefore: notBefore))
    return principal
  }

  private func checkTimes(expiresAt: Double, notBefore: Double?) throws(TokenError) {
    let now = clock.now().timeIntervalSince1970
    if now >= expiresAt + leeway { throw .expired }
    if let notBefore, now + leeway < notBefore { throw .notYetValid }
  }

  private func principal(from claims: [String: JSONValue]) throws(TokenError) -> Principal {
    guard case .string(let subject) = claims["sub"], !subject.isEmpty else { throw .invalidClaim("sub") }
    let role: Principal.Role
    switch claims["role"] {
    case nil: role = .customer
    case .string(let name):
      guard let named = Principal.Role(rawValue: name) else { throw .invalidClaim("role") }
      role = named
    default: throw .invalidClaim("role")
    }
    var hubs: [String] = []
    switch claims["hubs"] {
    case nil: break
    case .array(let values):
      for value in values {
        guard case .string(let hub) = value, !hub.isEmpty else { throw .invalidClaim("hubs") }
        hubs.append(hub)
      }
    default: throw .invalidClaim("hubs")
    }
    return Principal(subject: subject, role: role, hubs: hubs)
  }
}

/// Tokens that passed verification, by their whole text, with what their times are checked
/// against. Bounded: past `capacity` entries it starts over.
final class VerifiedTokens: Sendable {
  struct Entry: Sendable {
    var principal: Principal
    var expiresAt: Double
    var notBefore: Double?
  }

  static let capacity = 10_000
  private let entries = Mutex<[String: Entry]>([:])

  func lookup(_ token: String) -> Entry? { entries.withLock { $0[token] } }

  func insert(_ token: String, _ entry: Entry) {
    entries.withLock { entries in
      if entries.count >= Self.capacity { entries.removeAll(keepingCapacity: true) }
      entries[token] = entry
    }
  }
}
