import GrocerCore
import GrocerFastPath

/// Accepts the caller's `X-Request-ID` if it is sane (1–128 printable ASCII characters), else
/// generates one; puts it in `request.requestID` and echoes it on the response.
public final class RequestIDMiddleware: HTTPMiddleware {
  public static let headerName = "X-Request-ID"
  private let ids: any IDGenerator

  public init(ids: any IDGenerator = ProcessUniqueIDs()) {
    self.ids = ids
  }

  public func before(_ request: inout HTTPRequest) throws(HTTPError) {
    // Already set when an immediate attempt handed the request on to the async path.
    if !request.requestID.isEmpty { return }
    if let given = request.headers[Self.headerName], Self.isAcceptable(given) {
      request.requestID = given
    } else {
      request.requestID = ids.next()
    }
  }

  public func after(_ request: HTTPRequest, _ response: inout HTTPResponse) {
    guard !request.requestID.isEmpty else { return }
    response.headers.add(Self.headerName, request.requestID)
  }

  /// 1–128 bytes, each printable ASCII other than space (so it is safe in logs and headers).
  static func isAcceptable(_ value: String) -> Bool {
    let utf8 = value.utf8
    guard !utf8.isEmpty, utf8.count <= 128 else { return false }
    return utf8.allSatisfy { $0 > 0x20 && $0 < 0x7F }
  }
}
