import GrocerContracts
import GrocerCore

/// The kinds of home section this server draws. A client lists the kinds it can draw
/// (`?sections=`); a kind it does not list is left out, never sent as another.
public enum HomeSectionType: String, Codable, Hashable, Sendable, CaseIterable {
  case banners, categories, products, buyAgain

  public init(from decoder: any Decoder) throws {
    let text = try decoder.singleValueContainer().decode(String.self)
    guard let type = HomeSectionType(rawValue: text) else {
      throw DomainError.invalidLayout(
        "`\(text)` is not a section type; use one of \(Self.allCases.map(\.rawValue).joined(separator: ", "))"
      )
    }
    self = type
  }

  /// The kinds a `sections=` value asks for: names this server does not know are ignored (a
  /// newer client may know more); without the parameter, the kinds of the first home API.
  public static func accepted(_ parameter: String?) -> Set<HomeSectionType> {
    guard let parameter else { return Set(allCases) }
    return Set(parameter.split(separator: ",").compactMap { HomeSectionType(rawValue: String($0)) })
  }
}

/// The home staff arranged for a hub (`PUT /v1/hubs/{hub}/home`): typed sections in order.
public struct HomeLayout: Codable, Hashable, Sendable {
  public var sections: [HomeSection]

  public init(sections: [HomeSection]) { self.sections = sections }

  public static let empty = HomeLayout(sections: [])
  public static let maximumSections = 30
}

/// One section of a layout. `title` is required for product rows; `banners` only for banners,
/// `categories` (tiles; the tree's roots when left out) only for categories, `source` only for
/// product rows; `limit` caps a product row or buy again (1–30, 10 when left out).
public struct HomeSection: Codable, Hashable, Sendable {
  public var id: String
  public var type: HomeSectionType
  public var title: String?
  public var banners: [Banner]?
  public var categories: [CategoryID]?
  public var source: ProductSource?
  public var limit: Int?

  public init(
    id: String, type: HomeSectionType, title: String? = nil, banners: [Banner]? = nil,
    categories: [CategoryID]? = nil, source: ProductSource? = nil, limit: Int? = nil
  ) {
    self.id = id
    self.type = type
    self.title = title
    self.banners = banners
    self.categories = categories
    self.source = source
    self.limit = limit
  }

  public static let limits = 1...30
  public static let standardLimit = 10

  public var rowLimit: Int { limit ?? Self.standardLimit }
}

/// A banner: `{ id, title, image, target }`.
public struct Banner: Codable, Hashable, Sendable {
  public var id: String
  public var title: String
  public var image: ProductImage
  public var target: BannerTarget

  public init(id: String, title: String, image: ProductImage, target: BannerTarget) {
    self.id = id
    self.title = title
    self.image = image
    self.target = target
  }
}

/// Where a banner leads: a category's page, or a list of products.
public struct BannerTarget: Codable, Hashable, Sendable {
  public enum Kind: String, Codable, Hashable, Sendable, CaseIterable {
    case category, products

    public init(from decoder: any Decoder) throws { self = try decodeKind(decoder, "banner target") }
  }
  public var kind: Kind
  public var category: CategoryID?
  public var skus: [SKU]?

  public static func category(_ id: CategoryID) -> BannerTarget {
    BannerTarget(kind: .category, category: id, skus: nil)
  }
  public static func products(_ skus: [SKU]) -> BannerTarget {
    BannerTarget(kind: .products, category: nil, skus: skus)
  }
}

/// What fills a product row: a category's most popular products, a staff list of SKUs, or the
/// products on offer (those with an `originalPrice`).
public struct ProductSource: Codable, Hashable, Sendable {
  public enum Kind: String, Codable, Hashable, Sendable, CaseIterable {
    case category, skus, onOffer

    public init(from decoder: any Decoder) throws { self = try decodeKind(decoder, "product source") }
  }
  public var kind: Kind
  public var category: CategoryID?
  public var skus: [SKU]?

  public static func category(_ id: CategoryID) -> ProductSource {
    ProductSource(kind: .category, category: id, skus: nil)
  }
  public static func skus(_ skus: [SKU]) -> ProductSource {
    ProductSource(kind: .skus, category: nil, skus: skus)
  }
  public static let onOffer = ProductSource(kind: .onOffer, category: nil, skus: nil)
}

/// The body of staff `PUT /v1/hubs/{hub}/home`: `{ sections: [HomeSection] }`.
public struct HomeLayoutBody: StrictBody, Encodable, Hashable {
  public var sections: [HomeSection]

  public static let allowedKeys: Set<String> = ["sections"]

  /// The layout, checked: unique section and banner ids, the fields each type needs and no
  /// others, titles of 1–100 characters, at most 30 sections, 20 banners and 100 SKUs a list.
  /// Categories and SKUs are not checked against the hub: what is missing when the home is drawn
  /// is left out then, so a layout may name what staff add next.
  public func validate() throws(DomainError) -> HomeLayout {
    guard sections.count <= HomeLayout.maximumSections else {
      throw .invalidLayout("a home holds at most \(HomeLayout.maximumSections) sections")
    }
    var ids = Set<String>()
    var result: [HomeSection] = []
    for (index, section) in sections.enumerated() {
      let field = "sections[\(index)]"
      guard Identifier.isValid(section.id) else {
        throw .invalidLayout("`\(field).id` must be 1–64 of A-Z a-z 0-9 . _ -")
      }
      guard ids.insert(section.id).inserted else {
        throw .invalidLayout("`\(field).id` repeats the id `\(section.id)`")
      }
      var checked = section
      checked.title = try Self.title(
        section.title, field: "\(field).title", required: section.type == .products)
      if let limit = section.limit, !HomeSection.limits.contains(limit) {
        throw .invalidLayout("`\(field).limit` must be 1 to \(HomeSection.limits.upperBound)")
      }
      try Self.refuse(section.banners != nil && section.type != .banners, "\(field).banners", section.type)
      try Self.refuse(
        section.categories != nil && section.type != .categories, "\(field).categories", section.type)
      try Self.refuse(section.source != nil && section.type != .products, "\(field).source", section.type)
      try Self.refuse(
        section.limit != nil && section.type != .products && section.type != .buyAgain, "\(field).limit",
        section.type)
      switch section.type {
      case .banners:
        guard let banners = section.banners, (1...20).contains(banners.count) else {
          throw .invalidLayout("`\(field).banners` must hold 1 to 20 banners")
        }
        var bannerIDs = Set<String>()
        checked.banners = try banners.enumerated().map { (position, banner) throws(DomainError) in
          let bannerField = "\(field).banners[\(position)]"
          guard Identifier.isValid(banner.id), bannerIDs.insert(banner.id).inserted else {
            throw .invalidLayout("`\(bannerField).id` must be a unique id (1–64 of A-Z a-z 0-9 . _ -)")
          }
          var banner = banner
          banner.title = try Self.title(banner.title, field: "\(bannerField).title", required: true) ?? ""
          try banner.image.validate(field: "\(bannerField).image")
          switch banner.target.kind {
          case .category:
            guard let id = banner.target.category, Identifier.isValid(id), banner.target.skus == nil else {
              throw .invalidLayout("`\(bannerField).target` of kind category needs a `category` id alone")
            }
          case .products:
            guard banner.target.category == nil else {
              throw .invalidLayout("`\(bannerField).target` of kind products takes `skus`, not `category`")
            }
            try Self.skus(banner.target.skus, field: "\(bannerField).target.skus")
          }
          return banner
        }
      case .categories:
        if let categories = section.categories {
          guard (1...100).contains(categories.count), categories.allSatisfy(Identifier.isValid) else {
            throw .invalidLayout("`\(field).categories` must hold 1 to 100 category ids")
          }
        }
      case .products:
        guard let source = section.source else {
          throw .invalidLayout("`\(field).source` is required for a products row")
        }
        switch source.kind {
        case .category:
          guard let id = source.category, Identifier.isValid(id), source.skus == nil else {
            throw .invalidLayout("`\(field).source` of kind category needs a `category` id alone")
          }
        case .skus:
          guard source.category == nil else {
            throw .invalidLayout("`\(field).source` of kind skus takes `skus`, not `category`")
          }
          try Self.skus(source.skus, field: "\(field).source.skus")
        case .onOffer:
          guard source.category == nil, source.skus == nil else {
            throw .invalidLayout("`\(field).source` of kind onOffer takes nothing else")
          }
        }
      case .buyAgain:
        break
      }
      result.append(checked)
    }
    return HomeLayout(sections: result)
  }

  private static func refuse(_ condition: Bool, _ field: String, _ type: HomeSectionType) throws(DomainError)
  {
    if condition { throw .invalidLayout("`\(field)` does not belong in a section of type \(type.rawValue)") }
  }

  private static func title(_ title: String?, field: String, required: Bool) throws(DomainError) -> String? {
    guard let title else {
      if required { throw .invalidLayout("`\(field)` is required") }
      return nil
    }
    let trimmed = ProductUpsert.trimmed(title)
    guard !trimmed.isEmpty, trimmed.count <= 100 else {
      throw .invalidLayout("`\(field)` must be 1 to 100 characters")
    }
    return trimmed
  }

  private static func skus(_ skus: [SKU]?, field: String) throws(DomainError) {
    guard let skus, (1...100).contains(skus.count), skus.allSatisfy(Identifier.isValid) else {
      throw .invalidLayout("`\(field)` must hold 1 to 100 SKUs")
    }
  }
}

/// A `kind` of a layout's body, refused as `invalidLayout` naming the kinds there are.
private func decodeKind<Kind: RawRepresentable & CaseIterable>(_ decoder: any Decoder, _ what: String) throws
  -> Kind where Kind.RawValue == String
{
  let text = try decoder.singleValueContainer().decode(String.self)
  guard let kind = Kind(rawValue: text) else {
    throw DomainError.invalidLayout(
      "`\(text)` is not a \(what) kind; use one of \(Kind.allCases.map(\.rawValue).joined(separator: ", "))")
  }
  return kind
}
