/// An error that can say something the work needs is down for now (a database restarting), not
/// that the work is wrong: the same work may succeed in a moment. Consumers wait on these.
public protocol OutageReporting: Error {
  var isUnavailable: Bool { get }
}

extension Error {
  /// Whether this error reports a passing outage (see `OutageReporting`).
  public var isTemporaryOutage: Bool { (self as? any OutageReporting)?.isUnavailable ?? false }
}
