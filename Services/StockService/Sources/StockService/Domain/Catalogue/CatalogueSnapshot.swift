import Foundation
import GrocerContracts
import GrocerCore

/// A product of a hub's catalogue with what orders made of it and its item JSON, written once.
public struct CatalogueEntry: Sendable {
  public var product: Product
  /// Units ordered at this hub (from `order.confirmed`): ranks rows and search ties.
  public var popularity: Int
  let json: [UInt8]

  public init(product: Product, popularity: Int) {
    self.product = product
    self.popularity = popularity
    json = CatalogueItem.json(product)
  }
}

/// One hub's catalogue screens as of one read of the store: its tree, its pages and its home
/// with every section except buy again already written, so a request only slices and joins
/// bytes. Built whole, never changed: a change builds the next one.
public final class CatalogueSnapshot: Sendable {
  public let hub: Hub
  public let tree: CategoryTree
  public let layout: HomeLayout
  private let entries: [SKU: CatalogueEntry]
  /// Each category's products and those of every category below it, in SKU order (a page's
  /// order: a SKU never changes, so a position stays put while others come and go).
  private let listings: [CategoryID: [SKU]]
  /// `{ hub, categories }`, the reply of the tree.
  public let categoriesReply: [UInt8]
  private let searchIndex: SearchIndex
  /// The layout's sections written out in order; buy again (the caller's) and a section left
  /// with nothing to show are nil.
  private let writtenSections: [(type: HomeSectionType, json: [UInt8]?, section: HomeSection)]

  public init(hub: Hub, tree: CategoryTree, layout: HomeLayout, products: [CatalogueEntry]) {
    self.hub = hub
    self.tree = tree
    self.layout = layout
    var entries: [SKU: CatalogueEntry] = [:]
    entries.reserveCapacity(products.count)
    var own: [CategoryID: [SKU]] = [:]
    for entry in products {
      entries[entry.product.sku] = entry
      if let category = entry.product.category, tree.contains(category) {
        own[category, default: []].append(entry.product.sku)
      }
    }
    self.entries = entries
    searchIndex = SearchIndex(products, categoryPath: tree.path(of:))
    var listings: [CategoryID: [SKU]] = [:]
    func collect(_ category: Category) -> [SKU] {
      var skus = own[category.id] ?? []
      for child in category.children { skus += collect(child) }
      skus.sort()
      listings[category.id] = skus
      return skus
    }
    for root in tree.roots { _ = collect(root) }
    self.listings = listings

    var reply = JSONBytes(capacity: 4096)
    reply.beginObject()
    reply.key("categories")
    Self.writeTree(tree.roots, to: &reply)
    reply.key("hub")
    reply.string(hub.id)
    reply.endObject()
    categoriesReply = reply.bytes
    writtenSections = layout.sections.map {
      ($0.type, Self.write($0, entries: entries, listings: listings, tree: tree), $0)
    }
  }

  public var productCount: Int { entries.count }

  public func contains(_ sku: SKU) -> Bool { entries[sku] != nil }

  public func entry(_ sku: SKU) -> CatalogueEntry? { entries[sku] }

  // MARK: Category pages

  /// Up to `limit` products of `category` (and the categories below it) after SKU `after`, with
  /// the SKU to continue after when more follow; nil when the tree has no such category.
  public func page(category: CategoryID, after: SKU?, limit: Int) -> (items: [[UInt8]], next: SKU?)? {
    guard tree.contains(category) else { return nil }
    let skus = listings[category] ?? []
    var start = skus.startIndex
    if let after {
      // The first SKU greater than `after`: binary search, as pages are deep in big categories.
      var high = skus.endIndex
      while start < high {
        let middle = (start + high) / 2
        if skus[middle] <= after { start = middle + 1 } else { high = middle }
      }
    }
    let end = min(skus.endIndex, start + max(1, limit))
    let items = skus[start..<end].compactMap { entries[$0]?.json }
    return (items, end < skus.endIndex ? skus[end - 1] : nil)
  }

  /// `{ category, hub, items, nextCursor }`.
  public func pageReply(category: CategoryID, items: [[UInt8]], nextCursor: String?) -> [UInt8] {
    var json = JSONBytes(capacity: 512 * (items.count + 1))
    json.beginObject()
    json.key("category")
    json.string(category)
    json.key("hub")
    json.string(hub.id)
    json.key("items")
    Self.writeItems(items, to: &json)
    json.key("nextCursor")
    if let nextCursor { json.string(nextCursor) } else { json.null() }
    json.endObject()
    return json.bytes
  }

  // MARK: Search

  /// The SKUs of products matching `query`, best first (see `SearchIndex`), `limit` of them
  /// after the first `offset`.
  public func search(_ query: SearchQuery, offset: Int, limit: Int) -> [SKU] {
    searchIndex.search(query, offset: offset, limit: limit)
  }

  // MARK: Home

  /// The home for a caller who draws `accepted` kinds of section, at `now`: `{ hub, hours,
  /// sections }`. `buyAgain` is the caller's most ordered SKUs (nil when anonymous); its section
  /// is left out when none of them is in the assortment, as is every other section with nothing
  /// left to show.
  public func home(accepting accepted: Set<HomeSectionType>, buyAgain: [SKU]?, now: Date) -> [UInt8] {
    home(accepting: accepted, buyAgain: buyAgain, hours: hub.hours.status(at: now))
  }

  /// The same with the hub's `hours` at the time asked, worked out by the caller.
  public func home(accepting accepted: Set<HomeSectionType>, buyAgain: [SKU]?, hours: HoursStatus) -> [UInt8]
  {
    var json = JSONBytes(capacity: 16_384)
    json.beginObject()
    json.key("hours")
    json.beginObject()
    json.key("closesAt")
    if let closesAt = hours.closesAt { json.date(closesAt) } else { json.null() }
    json.key("isOpen")
    json.bool(hours.isOpen)
    json.key("opensAt")
    if let opensAt = hours.opensAt { json.date(opensAt) } else { json.null() }
    json.endObject()
    json.key("hub")
    json.string(hub.id)
    json.key("sections")
    json.beginArray()
    for (type, written, section) in writtenSections where accepted.contains(type) {
      if type == .buyAgain {
        let items = (buyAgain ?? []).lazy.compactMap { self.entries[$0]?.json }.prefix(section.rowLimit)
        guard !items.isEmpty else { continue }
        json.json(Self.section(section, items: Array(items), extra: nil))
      } else if let written {
        json.json(written)
      }
    }
    json.endArray()
    json.endObject()
    return json.bytes
  }

  /// The SKUs a products row shows, in order, before the limit: unknown ones dropped.
  static func rowSKUs(
    _ source: ProductSource, entries: [SKU: CatalogueEntry], listings: [CategoryID: [SKU]]
  ) -> [SKU] {
    switch source.kind {
    case .skus:
      var seen = Set<SKU>()
      return (source.skus ?? []).filter { entries[$0] != nil && seen.insert($0).inserted }
    case .category:
      return byPopularity(listings[source.category ?? ""] ?? [], entries)
    case .onOffer:
      return byPopularity(
        entries.values.filter { $0.product.originalPrice != nil }.map(\.product.sku), entries)
    }
  }

  private static func byPopularity(_ skus: [SKU], _ entries: [SKU: CatalogueEntry]) -> [SKU] {
    skus.sorted { lhs, rhs in
      let (left, right) = (entries[lhs]?.popularity ?? 0, entries[rhs]?.popularity ?? 0)
      return left != right ? left > right : lhs < rhs
    }
  }

  private static func write(
    _ section: HomeSection, entries: [SKU: CatalogueEntry], listings: [CategoryID: [SKU]], tree: CategoryTree
  ) -> [UInt8]? {
    switch section.type {
    case .buyAgain:
      return nil
    case .products:
      guard let source = section.source else { return nil }
      let skus = rowSKUs(source, entries: entries, listings: listings).prefix(section.rowLimit)
      guard !skus.isEmpty else { return nil }
      // A row drawn from a category names it, so the app can open the whole page.
      let category = source.kind == .category ? source.category : nil
      return Self.section(section, items: skus.compactMap { entries[$0]?.json }, extra: category)
    case .categories:
      let ids = section.categories ?? tree.roots.map(\.id)
      let tiles = ids.compactMap { tree.category($0) }.map { category -> [UInt8] in
        var json = JSONBytes(capacity: 160)
        writeCategory(category, withChildren: false, to: &json)
        return json.bytes
      }
      guard !tiles.isEmpty else { return nil }
      return Self.section(section, items: tiles, extra: nil)
    case .banners:
      let banners = (section.banners ?? []).compactMap { banner -> [UInt8]? in
        var target = banner.target
        switch target.kind {
        case .category:
          guard let id = target.category, tree.contains(id) else { return nil }
        case .products:
          let skus = (target.skus ?? []).filter { entries[$0] != nil }
          guard !skus.isEmpty else { return nil }
          target.skus = skus
        }
        var json = JSONBytes(capacity: 256)
        json.beginObject()
        json.key("id")
        json.string(banner.id)
        json.key("image")
        banner.image.write(to: &json)
        json.key("target")
        json.beginObject()
        if let category = target.category {
          json.key("category")
          json.string(category)
        }
        json.key("kind")
        json.string(target.kind.rawValue)
        if let skus = target.skus {
          json.key("skus")
          json.beginArray()
          for sku in skus { json.string(sku) }
          json.endArray()
        }
        json.endObject()
        json.key("title")
        json.string(banner.title)
        json.endObject()
        return json.bytes
      }
      guard !banners.isEmpty else { return nil }
      return Self.section(section, items: banners, extra: nil)
    }
  }

  /// `{ category?, id, items, title?, type }`.
  private static func section(_ section: HomeSection, items: [[UInt8]], extra category: CategoryID?)
    -> [UInt8]
  {
    var json = JSONBytes(capacity: 512 * (items.count + 1))
    json.beginObject()
    if let category {
      json.key("category")
      json.string(category)
    }
    json.key("id")
    json.string(section.id)
    json.key("items")
    writeItems(items, to: &json)
    if let title = section.title {
      json.key("title")
      json.string(title)
    }
    json.key("type")
    json.string(section.type.rawValue)
    json.endObject()
    return json.bytes
  }

  private static func writeItems(_ items: [[UInt8]], to json: inout JSONBytes) {
    json.beginArray()
    for item in items { json.json(item) }
    json.endArray()
  }

  private static func writeTree(_ categories: [Category], to json: inout JSONBytes) {
    json.beginArray()
    for category in categories { writeCategory(category, withChildren: true, to: &json) }
    json.endArray()
  }

  /// `{ children?, id, image, name }`: a node of the tree, or a tile without its children.
  private static func writeCategory(_ category: Category, withChildren: Bool, to json: inout JSONBytes) {
    json.beginObject()
    if withChildren {
      json.key("children")
      writeTree(category.children, to: &json)
    }
    json.key("id")
    json.string(category.id)
    json.key("image")
    if let image = category.image { image.write(to: &json) } else { json.null() }
    json.key("name")
    json.string(category.name)
    json.endObject()
  }
}
