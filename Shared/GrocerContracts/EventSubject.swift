/// An event's `subject`: its aggregate's kind and id (`order/<id>`, `stock/<hub>/<sku>`, …).
/// Each subject has its own `sequence`, so a consumer may keep the newest per whole subject;
/// the kind keeps an order's own events, its tracking and its Live Activity apart.
public enum EventSubject {
  public static func order(_ orderId: String) -> String { "order/" + orderId }
  public static func tracking(_ orderId: String) -> String { "tracking/" + orderId }
  public static func liveActivity(_ orderId: String) -> String { "liveActivity/" + orderId }
  public static func stock(hub: HubID, sku: SKU) -> String { "stock/" + hub + "/" + sku }
  public static func hub(_ hub: HubID) -> String { "hub/" + hub }
  public static func catalogue(hub: HubID) -> String { "catalogue/" + hub }
  public static func cart(userId: String, hub: HubID) -> String { "cart/" + userId + "/" + hub }
  public static func push(_ pushId: String) -> String { "push/" + pushId }
  public static func notice(hub: HubID) -> String { "notice/" + hub }

  /// The hub and SKU a `stock.changed` subject names. Also reads the kindless `<hub>/<sku>` that
  /// publishers wrote before subjects named their kind, for events still queued from then.
  public static func stockParts(_ subject: String) -> (hub: HubID, sku: SKU)? {
    let body = subject.hasPrefix("stock/") ? subject.dropFirst("stock/".count) : Substring(subject)
    let parts = body.split(separator: "/", maxSplits: 1)
    guard parts.count == 2 else { return nil }
    return (String(parts[0]), String(parts[1]))
  }

  /// The id after `kind/`, or nil when the subject is of another kind.
  public static func id(of subject: String, kind: String) -> String? {
    guard subject.count > kind.count + 1, subject.hasPrefix(kind), subject.dropFirst(kind.count).first == "/"
    else { return nil }
    return String(subject.dropFirst(kind.count + 1))
  }
}
