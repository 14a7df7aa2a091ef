import GrocerContracts
import GrocerCore

/// A category id, unique within a hub's tree (the identifier rule of SKUs and hubs).
public typealias CategoryID = String

/// One category of a hub's tree: `{ id, name, image | null, children: [Category] }`.
public struct Category: Codable, Hashable, Sendable {
  public var id: CategoryID
  public var name: String
  public var image: ProductImage?
  public var children: [Category]

  public init(id: CategoryID, name: String, image: ProductImage? = nil, children: [Category] = []) {
    self.id = id
    self.name = name
    self.image = image
    self.children = children
  }

  private enum CodingKeys: String, CodingKey { case id, name, image, children }

  public init(from decoder: any Decoder) throws {
    let container = try decoder.container(keyedBy: CodingKeys.self)
    id = try container.decode(CategoryID.self, forKey: .id)
    name = try container.decode(String.self, forKey: .name)
    image = try container.decodeIfPresent(ProductImage.self, forKey: .image)
    children = try container.decodeIfPresent([Category].self, forKey: .children) ?? []
  }

  public func encode(to encoder: any Encoder) throws {
    var container = encoder.container(keyedBy: CodingKeys.self)
    try container.encode(id, forKey: .id)
    try container.encode(name, forKey: .name)
    try container.encode(image, forKey: .image)
    try container.encode(children, forKey: .children)
  }
}

/// A hub's categories as staff arranged them: roots in order, each with its children.
///
/// A product is listed under one category; a category's page shows its own products and those
/// of every category below it.
public struct CategoryTree: Hashable, Sendable {
  public private(set) var roots: [Category]
  /// Each category's id with the ids of itself and every category below it.
  private var subtree: [CategoryID: Set<CategoryID>] = [:]
  /// Each category's name with its parents' names, root first (what search indexes).
  private var paths: [CategoryID: [String]] = [:]
  private var nodes: [CategoryID: Category] = [:]

  public static let maximumDepth = 3
  public static let maximumCount = 1000
  public static let maximumNameLength = 100

  public static let empty = CategoryTree()

  private init() { roots = [] }

  /// The tree, checked: unique valid ids, names of 1–100 characters, at most 3 levels and 1,000
  /// categories, images by `ProductImage`'s rules.
  public init(roots: [Category]) throws(DomainError) {
    self.roots = []
    var count = 0
    func visit(_ category: Category, depth: Int, field: String, parents: [String]) throws(DomainError)
      -> Set<CategoryID>
    {
      count += 1
      guard count <= Self.maximumCount else {
        throw .invalidCategories("a tree holds at most \(Self.maximumCount) categories")
      }
      guard depth <= Self.maximumDepth else {
        throw .invalidCategories("`\(field)` is deeper than \(Self.maximumDepth) levels")
      }
      guard Identifier.isValid(category.id) else {
        throw .invalidCategories("`\(field).id` must be 1–64 of A-Z a-z 0-9 . _ -")
      }
      guard nodes[category.id] == nil else {
        throw .invalidCategories("`\(field).id` repeats the id `\(category.id)`")
      }
      let name = ProductUpsert.trimmed(category.name)
      guard !name.isEmpty, name.count <= Self.maximumNameLength else {
        throw .invalidCategories("`\(field).name` must be 1 to \(Self.maximumNameLength) characters")
      }
      try category.image?.validate(field: "\(field).image")
      var trimmed = category
      trimmed.name = name
      nodes[category.id] = trimmed
      paths[category.id] = parents + [name]
      var below: Set<CategoryID> = [category.id]
      for (index, child) in category.children.enumerated() {
        below.formUnion(
          try visit(child, depth: depth + 1, field: "\(field).children[\(index)]", parents: parents + [name]))
      }
      subtree[category.id] = below
      return below
    }
    for (index, root) in roots.enumerated() {
      _ = try visit(root, depth: 1, field: "categories[\(index)]", parents: [])
    }
    self.roots = roots.map { Self.trimmingNames($0, nodes) }
  }

  private static func trimmingNames(_ category: Category, _ nodes: [CategoryID: Category]) -> Category {
    var copy = category
    copy.name = nodes[category.id]?.name ?? category.name
    copy.children = category.children.map { trimmingNames($0, nodes) }
    return copy
  }

  public func contains(_ id: CategoryID) -> Bool { nodes[id] != nil }

  public func category(_ id: CategoryID) -> Category? { nodes[id] }

  /// `id` and every category below it; empty when the tree has no such category.
  public func subtree(of id: CategoryID) -> Set<CategoryID> { subtree[id] ?? [] }

  /// The names from the root down to `id` ("Getränke", "Wasser"); empty when unknown.
  public func path(of id: CategoryID) -> [String] { paths[id] ?? [] }

  public var isEmpty: Bool { roots.isEmpty }
}

/// The body of staff `PUT /v1/hubs/{hub}/categories`: `{ categories: [Category] }`, replacing
/// the hub's tree. Products keep their category id; one whose category is gone is listed nowhere
/// until staff move it.
public struct CategoriesBody: StrictBody, Encodable, Hashable {
  public var categories: [Category]

  public static let allowedKeys: Set<String> = ["categories"]

  public func validate() throws(DomainError) -> CategoryTree { try CategoryTree(roots: categories) }
}
