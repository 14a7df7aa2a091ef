import GrocerCore

/// Request/reply on the queue `stock.catalogue`: StockService's current hubs and products, for a
/// service that keeps a copy fed by `hub.changed`/`stock.changed` and finds it empty (first start,
/// a queue created after the events were sent). The copy is filled without reading
/// StockService's database, and the `version`s make it commute with the events: a consumer keeps
/// whichever of snapshot and event carries the higher version.
public enum CatalogueQueue {
  /// The queue StockService answers on (default exchange, direct reply-to).
  public static let name = "stock.catalogue"
  /// Most products per page.
  public static let maximumPageSize = 1_000
}

/// `{ "kind": "hubs" }` → every hub; `{ "kind": "products", "hub": "h1", "after": "p00100",
/// "limit": 500 }` → that hub's products with SKU after `after`, in SKU order.
public struct CatalogueRequest: Codable, Hashable, Sendable {
  public enum Kind: String, Codable, Hashable, Sendable {
    case hubs, products
  }

  public var kind: Kind
  public var hub: HubID?
  public var after: SKU?
  /// 1…`CatalogueQueue.maximumPageSize`; absent means the maximum.
  public var limit: Int?

  public init(kind: Kind, hub: HubID? = nil, after: SKU? = nil, limit: Int? = nil) {
    self.kind = kind
    self.hub = hub
    self.after = after
    self.limit = limit
  }

  public static let hubs = CatalogueRequest(kind: .hubs)

  public static func products(hub: HubID, after: SKU? = nil, limit: Int? = nil) -> CatalogueRequest {
    CatalogueRequest(kind: .products, hub: hub, after: after, limit: limit)
  }
}

/// A value as its event would carry it, with the `sequence` that event would have.
public struct Versioned<Value: Codable & Hashable & Sendable>: Codable, Hashable, Sendable {
  public var value: Value
  public var version: Int64

  public init(_ value: Value, version: Int64) {
    self.value = value
    self.version = version
  }
}

/// `{ "hubs": [...] }` for `hubs`; `{ "products": [...], "next": "p00600" | null }` for
/// `products` (`next` is the `after` of the following page); `{ "error": { "code", "detail" } }`
/// when the request is malformed (`badRequest`) or names an unknown hub (`unknownHub`).
public struct CatalogueReply: Codable, Hashable, Sendable {
  public var hubs: [Versioned<HubChanged>]?
  public var products: [Versioned<StockChanged>]?
  public var next: SKU?
  public var error: RemoteError?

  public init(
    hubs: [Versioned<HubChanged>]? = nil, products: [Versioned<StockChanged>]? = nil, next: SKU? = nil,
    error: RemoteError? = nil
  ) {
    self.hubs = hubs
    self.products = products
    self.next = next
    self.error = error
  }
}

/// An error answered over request/reply: a stable `code` and a sentence.
public struct RemoteError: Codable, Hashable, Sendable, Error, CustomStringConvertible {
  public var code: String
  public var detail: String

  public init(code: String, detail: String) {
    self.code = code
    self.detail = detail
  }

  public var description: String { "\(code): \(detail)" }
}

extension RemoteError: JSONReadable {
  /// `{code, detail}`.
  public func write(into out: inout JSONBytes) {
    out.beginObject()
    out.key("code")
    out.string(code)
    out.key("detail")
    out.string(detail)
    out.endObject()
  }

  public init(reading reader: inout JSONReader) throws {
    var code: String?
    var detail: String?
    try reader.readObject { reader, key in
      switch key {
      case "code": code = try reader.readString()
      case "detail": detail = try reader.readString()
      default: try reader.skipValue()
      }
    }
    guard let code, let detail else { throw JSONReader.Failure("an error needs code and detail") }
    self.init(code: code, detail: detail)
  }
}
