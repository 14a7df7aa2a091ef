/// Why `HTTP2Client.send` failed. An HTTP error status is not an error: it comes back as a
/// response.
public struct HTTPClientError: Error, Sendable, Equatable, CustomStringConvertible {
  /// What kind of failure, for callers that decide whether to retry.
  public enum Kind: Sendable, Equatable {
    /// The request time-out (or the connect time-out) elapsed: the server may have acted on it.
    case timedOut
    /// No connection could be made (refused, unresolvable host, TLS handshake or certificate):
    /// nothing was sent.
    case connectFailed
    /// The connection broke or the server spoke badly after the request may have been sent.
    case transferFailed
    /// The client is not running: not started yet, or shut down (requests in flight at shutdown
    /// fail with this too).
    case shutDown
    /// libcurl refused the request before it started (a bad option or URL).
    case invalidRequest
  }

  public let kind: Kind
  /// libcurl's `CURLcode` (0 when the failure did not come from libcurl).
  public let curlCode: Int
  /// libcurl's error text, or ours.
  public let message: String

  public init(kind: Kind, curlCode: Int = 0, message: String) {
    self.kind = kind
    self.curlCode = curlCode
    self.message = message
  }

  public var description: String {
    curlCode == 0 ? "\(kind): \(message)" : "\(kind) (curl \(curlCode)): \(message)"
  }

  static let shutDown = HTTPClientError(kind: .shutDown, message: "the HTTP client is shut down")
  static let notStarted = HTTPClientError(kind: .shutDown, message: "the HTTP client is not started")
}
