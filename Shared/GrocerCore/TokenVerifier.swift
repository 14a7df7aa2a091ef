/// Turns a bearer token into the principal it proves, or says why it does not.
///
/// The HTTP auth middleware depends on this protocol only; `GrocerAuth` implements it with
/// HS256 (and production may plug in ES256/RS256 verifiers).
public protocol TokenVerifier: Sendable {
  func verify(_ token: String) throws(TokenError) -> Principal
}

/// Why a token was refused. Every case is a 401 to the caller; the case goes to the log.
public enum TokenError: Error, Hashable, Sendable {
  /// Not three base64url parts of JSON.
  case malformed
  /// `alg` is not the configured algorithm (this includes `none`).
  case wrongAlgorithm(String)
  case badSignature
  case expired
  case notYetValid
  /// A claim is missing or of the wrong type (`sub`, `role`, `hubs`).
  case invalidClaim(String)
}
