import Foundation
import GrocerAuth
import GrocerContracts
import GrocerCore
import Testing

@testable import StockService

/// The catalogue screens' rules without I/O: cursors, the tree, the layout and its sections,
/// pages that stay put while products come and go, and search terms.
@Suite struct CatalogueScreensTests {
  static let codec = PageCursorCodec(authenticator: MessageAuthenticator(secret: "s", purpose: "test cursor"))

  // MARK: Cursors

  @Test func aCursorComesBackOnlyForItsHubAndList() throws {
    let cursor = Self.codec.encode(PageCursor(hub: "h1", list: .category("obst"), position: "p00042"))
    #expect(try Self.codec.position(cursor, hub: "h1", list: .category("obst")) == "p00042")
    #expect(cursor.utf8.allSatisfy { $0 < 0x80 && $0 != UInt8(ascii: "=") })
    #expect(
      errorCode { () throws(DomainError) in
        try Self.codec.position(cursor, hub: "h2", list: .category("obst"))
      } == "invalidCursor")
    #expect(
      errorCode { () throws(DomainError) in
        try Self.codec.position(cursor, hub: "h1", list: .category("gemuese"))
      } == "invalidCursor")
    #expect(
      errorCode { () throws(DomainError) in try Self.codec.position(cursor, hub: "h1", list: .search("obst"))
      } == "invalidCursor")
    let search = Self.codec.encode(PageCursor(hub: "h1", list: .search("hafer drink"), position: "20"))
    #expect(try Self.codec.position(search, hub: "h1", list: .search("hafer drink")) == "20")
    #expect(
      errorCode { () throws(DomainError) in try Self.codec.position(search, hub: "h1", list: .search("hafer"))
      } == "invalidCursor")
  }

  @Test func aChangedForeignOrGarbledCursorIsRefused() throws {
    let cursor = Self.codec.encode(PageCursor(hub: "h1", list: .category("obst"), position: "p00042"))
    let parts = cursor.split(separator: ".").map(String.init)
    // Another position under the old tag, a flipped tag byte, another key's cursor, and noise.
    let movedPayload = Data("1\u{1F}h1\u{1F}c\u{1F}obst\u{1F}p00001".utf8).base64EncodedString()
      .replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
      .replacingOccurrences(of: "=", with: "")
    let moved = movedPayload + "." + parts[1]
    var flipped = Array(parts[1])
    flipped[0] = flipped[0] == "A" ? "B" : "A"
    let otherKey = PageCursorCodec(authenticator: MessageAuthenticator(secret: "t", purpose: "test cursor"))
      .encode(PageCursor(hub: "h1", list: .category("obst"), position: "p00042"))
    for bad in [
      moved, parts[0] + "." + String(flipped), otherKey, "", ".", "abc", "a.b.c", "%%%.%%%", parts[0],
    ] {
      #expect(
        errorCode { () throws(DomainError) in try Self.codec.position(bad, hub: "h1", list: .category("obst"))
        }
          == "invalidCursor", "\(bad)")
    }
  }

  @Test func aLimitIsOneToFiftyAndTwentyWhenLeftOut() throws {
    #expect(try PageLimit.parse(nil) == 20)
    #expect(try PageLimit.parse("1") == 1)
    #expect(try PageLimit.parse("50") == 50)
    for bad in ["0", "51", "-1", "abc", "", "2.5"] {
      #expect(errorCode { () throws(DomainError) in try PageLimit.parse(bad) } == "invalidLimit", "\(bad)")
    }
  }

  // MARK: Tree

  static func tree() throws -> CategoryTree {
    try CategoryTree(roots: [
      Category(
        id: "drinks", name: " Getränke ",
        children: [Category(id: "water", name: "Wasser"), Category(id: "juice", name: "Säfte")]),
      Category(id: "fruit", name: "Obst"),
    ])
  }

  @Test func aTreeKnowsEachCategorysSubtreeAndPath() throws {
    let tree = try Self.tree()
    #expect(tree.roots[0].name == "Getränke")
    #expect(tree.subtree(of: "drinks") == ["drinks", "water", "juice"])
    #expect(tree.subtree(of: "water") == ["water"])
    #expect(tree.path(of: "juice") == ["Getränke", "Säfte"])
    #expect(!tree.contains("nope") && tree.subtree(of: "nope").isEmpty)
  }

  @Test func aBadTreeIsRefusedNamingWhere() {
    func code(_ roots: [Category]) -> String? {
      errorCode { () throws(DomainError) in try CategoryTree(roots: roots) }
    }
    #expect(code([Category(id: "a", name: "A"), Category(id: "a", name: "B")]) == "invalidCategories")
    #expect(code([Category(id: "a b", name: "A")]) == "invalidCategories")
    #expect(code([Category(id: "a", name: "  ")]) == "invalidCategories")
    #expect(code([Category(id: "a", name: String(repeating: "x", count: 101))]) == "invalidCategories")
    let deep = Category(
      id: "1", name: "1",
      children: [
        Category(
          id: "2", name: "2",
          children: [Category(id: "3", name: "3", children: [Category(id: "4", name: "4")])])
      ])
    #expect(code([deep]) == "invalidCategories")
    #expect(
      code([Category(id: "a", name: "A", image: ProductImage(url: "x.png", width: 1, height: 1))])
        == "invalidImage")
    #expect(
      code([Category(id: "a", name: "A", image: ProductImage(url: "/a.png", width: 0, height: 1))])
        == "invalidImage")
  }

  // MARK: Layout

  static func decodeLayout(_ json: String) throws(DomainError) -> HomeLayout {
    try HomeLayoutBody.decodeStrict(from: Data(json.utf8)).validate()
  }

  @Test func aLayoutIsCheckedSectionBySection() throws {
    let good = try Self.decodeLayout(
      #"{"sections":[{"id":"b","type":"banners","banners":[{"id":"x","title":" Hi ","image":{"url":"/i.png","width":10,"height":5},"target":{"kind":"category","category":"fruit"}}]},{"id":"c","type":"categories"},{"id":"p","type":"products","title":"Offers","source":{"kind":"onOffer"},"limit":5},{"id":"a","type":"buyAgain"}]}"#
    )
    #expect(good.sections.map(\.type) == [.banners, .categories, .products, .buyAgain])
    #expect(good.sections[0].banners?[0].title == "Hi")
    let bad: [String] = [
      #"{"sections":[{"id":"a","type":"stories"}]}"#,
      #"{"sections":[{"id":"a","type":"buyAgain"},{"id":"a","type":"categories"}]}"#,
      #"{"sections":[{"id":"p","type":"products","source":{"kind":"onOffer"}}]}"#,
      #"{"sections":[{"id":"p","type":"products","title":"T"}]}"#,
      #"{"sections":[{"id":"p","type":"products","title":"T","source":{"kind":"category"}}]}"#,
      #"{"sections":[{"id":"p","type":"products","title":"T","source":{"kind":"skus","skus":[]}}]}"#,
      #"{"sections":[{"id":"p","type":"products","title":"T","source":{"kind":"newest"}}]}"#,
      #"{"sections":[{"id":"p","type":"products","title":"T","source":{"kind":"onOffer"},"limit":31}]}"#,
      #"{"sections":[{"id":"c","type":"categories","limit":3}]}"#,
      #"{"sections":[{"id":"a","type":"buyAgain","source":{"kind":"onOffer"}}]}"#,
      #"{"sections":[{"id":"b","type":"banners"}]}"#,
      #"{"sections":[{"id":"b","type":"banners","banners":[{"id":"x","title":"","image":{"url":"/i.png","width":1,"height":1},"target":{"kind":"category","category":"f"}}]}]}"#,
      #"{"sections":[{"id":"b","type":"banners","banners":[{"id":"x","title":"T","image":{"url":"/i.png","width":1,"height":1},"target":{"kind":"products"}}]}]}"#,
    ]
    for body in bad {
      #expect(
        errorCode { () throws(DomainError) in try Self.decodeLayout(body) } == "invalidLayout", "\(body)")
    }
    #expect(
      errorCode { () throws(DomainError) in try Self.decodeLayout(#"{"sections":[],"extra":1}"#) }
        == "unknownField")
  }

  @Test func theClientsListDecidesWhichSectionTypesAreSent() {
    #expect(HomeSectionType.accepted(nil) == Set(HomeSectionType.allCases))
    #expect(HomeSectionType.accepted("banners,products,stories") == [.banners, .products])
    #expect(HomeSectionType.accepted("").isEmpty)
  }

  // MARK: Snapshot

  static func product(_ sku: SKU, _ category: CategoryID?, price: Int = 100, original: Int? = nil) -> Product
  {
    Product(
      sku: sku, name: "Product \(sku)", price: eur(price), originalPrice: original.map(eur),
      category: category,
      image: ProductImage(url: "/images/\(sku).png", width: 400, height: 400))
  }

  static func snapshot(_ products: [(Product, Int)], layout: HomeLayout = .empty) throws -> CatalogueSnapshot
  {
    CatalogueSnapshot(
      hub: DemoAssortment.demoHubs()[0], tree: try tree(), layout: layout,
      products: products.map { CatalogueEntry(product: $0.0, popularity: $0.1) })
  }

  struct Item: Decodable, Equatable {
    var sku: String
  }

  static func skus(_ items: [[UInt8]]) throws -> [String] {
    try items.map { try JSON.decode(Item.self, from: Data($0)).sku }
  }

  @Test func aParentsPageListsItsChildrensProductsInSKUOrder() throws {
    let snapshot = try Self.snapshot([
      (Self.product("p3", "water"), 0), (Self.product("p1", "juice"), 0), (Self.product("p2", "drinks"), 0),
      (Self.product("p4", "fruit"), 0), (Self.product("p5", nil), 0), (Self.product("p6", "gone"), 0),
    ])
    let first = try #require(snapshot.page(category: "drinks", after: nil, limit: 2))
    #expect(try Self.skus(first.items) == ["p1", "p2"] && first.next == "p2")
    let second = try #require(snapshot.page(category: "drinks", after: first.next, limit: 2))
    #expect(try Self.skus(second.items) == ["p3"] && second.next == nil)
    #expect(try Self.skus(snapshot.page(category: "water", after: nil, limit: 20)!.items) == ["p3"])
    #expect(snapshot.page(category: "gone", after: nil, limit: 20) == nil)
  }

  @Test func pagingWhileProductsComeAndGoNeverRepeatsOrSkipsOneThatStayed() throws {
    let before = try Self.snapshot((1...9).map { (Self.product("p\($0)", "water"), 0) })
    let first = try #require(before.page(category: "water", after: nil, limit: 3))
    // p2 (shown) and p5 (not yet) leave, p0 (before the cursor) and p45 (after it) arrive.
    var after = (1...9).filter { $0 != 2 && $0 != 5 }.map { (Self.product("p\($0)", "water"), 0) }
    after += [(Self.product("p0", "water"), 0), (Self.product("p45", "water"), 0)]
    let changed = try Self.snapshot(after)
    var seen = try Self.skus(first.items)
    var next = first.next
    while let cursor = next {
      let page = try #require(changed.page(category: "water", after: cursor, limit: 3))
      seen += try Self.skus(page.items)
      next = page.next
    }
    #expect(seen == ["p1", "p2", "p3", "p4", "p45", "p6", "p7", "p8", "p9"])
  }

  struct Home: Decodable {
    struct Section: Decodable {
      var id: String
      var type: String
      var title: String?
      var category: String?
      var items: [JSONValue]
    }
    var hub: String
    var hours: HoursStatus
    var sections: [Section]
  }

  static let layout = HomeLayout(sections: [
    HomeSection(
      id: "b", type: .banners,
      banners: [
        Banner(
          id: "gone", title: "Gone", image: ProductImage(url: "/b.png", width: 3, height: 1),
          target: .category("gone")),
        Banner(
          id: "ok", title: "Fruit", image: ProductImage(url: "/b.png", width: 3, height: 1),
          target: .products(["x", "p4"])),
      ]),
    HomeSection(id: "again", type: .buyAgain, title: "Again", limit: 2),
    HomeSection(id: "tiles", type: .categories),
    HomeSection(id: "offers", type: .products, title: "Offers", source: .onOffer),
    HomeSection(id: "drinks", type: .products, title: "Drinks", source: .category("drinks"), limit: 2),
    HomeSection(id: "empty", type: .products, title: "Nothing", source: .skus(["x", "y"])),
  ])

  @Test func theHomeKeepsStaffsOrderAndLeavesOutWhatCannotBeShown() throws {
    let snapshot = try Self.snapshot(
      [
        (Self.product("p1", "water"), 5), (Self.product("p2", "juice"), 9), (Self.product("p3", "water"), 9),
        (Self.product("p4", "fruit", price: 100, original: 150), 0),
      ], layout: Self.layout)
    let now = date("2026-12-07T10:00:00Z")
    let anonymous = try JSON.decode(
      Home.self, from: Data(snapshot.home(accepting: Set(HomeSectionType.allCases), buyAgain: nil, now: now)))
    #expect(anonymous.hub == "h1" && anonymous.hours.isOpen)
    #expect(anonymous.sections.map(\.id) == ["b", "tiles", "offers", "drinks"])
    #expect(anonymous.sections[0].items.count == 1)
    #expect(anonymous.sections[1].items.count == 2)
    #expect(anonymous.sections[2].items.count == 1)
    // The most ordered first, ties by SKU, cut at the row's limit; the row names its category.
    let drinks = anonymous.sections[3]
    #expect(
      drinks.items.compactMap { $0["sku"] } == [.string("p2"), .string("p3")] && drinks.category == "drinks")

    let signedIn = try JSON.decode(
      Home.self,
      from: Data(
        snapshot.home(accepting: [.buyAgain, .products], buyAgain: ["x", "p3", "p1", "p2"], now: now)))
    #expect(signedIn.sections.map(\.id) == ["again", "offers", "drinks"])
    #expect(signedIn.sections[0].items.compactMap { $0["sku"] } == [.string("p3"), .string("p1")])
    let nothingKnown = try JSON.decode(
      Home.self, from: Data(snapshot.home(accepting: [.buyAgain], buyAgain: ["x"], now: now)))
    #expect(nothingKnown.sections.isEmpty)
  }

  @Test func anItemIsTheAppsProductWithoutAStockCount() throws {
    var product = Self.product("p1", "water", price: 129, original: 159)
    product.deposit = eur(25)
    product.unitPrice = UnitPrice(amount: eur(258), per: .litre)
    #expect(
      String(decoding: CatalogueItem.json(product), as: UTF8.self)
        == #"{"deposit":{"currency":"EUR","minorUnits":25},"image":{"height":400,"url":"/images/p1.png","width":400},"name":"Product p1","originalPrice":{"currency":"EUR","minorUnits":159},"price":{"currency":"EUR","minorUnits":129},"sku":"p1","unitPrice":{"currency":"EUR","minorUnits":258,"per":"l"}}"#
    )
    let bare = Product(sku: "p2", name: "Bare", price: eur(1))
    #expect(
      String(decoding: CatalogueItem.json(bare), as: UTF8.self)
        == #"{"deposit":null,"image":null,"name":"Bare","originalPrice":null,"price":{"currency":"EUR","minorUnits":1},"sku":"p2","unitPrice":null}"#
    )
  }

  // MARK: Products

  @Test func catalogueFieldsOfAProductAreChecked() throws {
    func code(_ upsert: ProductUpsert) -> String? {
      errorCode { () throws(DomainError) in try upsert.validate(sku: "p1", currency: "EUR") }
    }
    #expect(code(ProductUpsert(name: "A", price: eur(100), originalPrice: eur(100))) == "invalidPrice")
    #expect(
      code(ProductUpsert(name: "A", price: eur(100), originalPrice: Money(minorUnits: 200, currency: "USD")))
        == "currencyMismatch")
    #expect(code(ProductUpsert(name: "A", price: eur(100), category: "not an id")) == "unknownCategory")
    #expect(
      code(ProductUpsert(name: "A", price: eur(100), brand: String(repeating: "b", count: 201)))
        == "invalidBrand")
    #expect(
      code(
        ProductUpsert(name: "A", price: eur(100), image: ProductImage(url: "ftp://x", width: 1, height: 1)))
        == "invalidImage")
    #expect(
      code(
        ProductUpsert(name: "A", price: eur(100), image: ProductImage(url: "/a b.png", width: 1, height: 1)))
        == "invalidImage")
    #expect(
      code(
        ProductUpsert(
          name: "A", price: eur(100), image: ProductImage(url: "/a.png", width: 1, height: 10_001)))
        == "invalidImage")
    let fine = ProductUpsert(
      name: "A", price: eur(100), originalPrice: eur(120), brand: "  Bio ", category: "fruit",
      image: ProductImage(url: "https://cdn.example/a.png", width: 400, height: 300))
    #expect(code(fine) == nil)
    #expect(try fine.validate(sku: "p1", currency: "EUR").brand == "Bio")
  }

  // MARK: Search

  @Test func searchTermsAreFoldedRunsOfLettersAndDigits() throws {
    let query = try SearchQuery("  Hafer-Drink  MÜSLI 1,5% ")
    #expect(query.terms == ["hafer", "drink", "musli", "1", "5"])
    #expect(query.normalized == "hafer drink musli 1 5")
    #expect(try SearchQuery("Äpfel").terms == ["apfel"])
    // Pieces beyond ASCII are folded whole: a dash of Unicode cuts, a combining accent does not.
    #expect(
      SearchQuery.terms(of: "Bio-Tee–Mix Cafe\u{301}s ÉCLAIR") == ["bio", "tee", "mix", "cafes", "eclair"])
    #expect(try SearchQuery(#"x" OR name:*"#).terms == ["x", "or", "name"])
    for bad in [nil, "", "  ", "-*\"", String(repeating: "a", count: 101), "a b c d e f g h i"] {
      #expect(
        errorCode { () throws(DomainError) in try SearchQuery(bad) } == "invalidQuery",
        "\(String(describing: bad))")
    }
  }

  static func searchable(
    _ sku: SKU, _ name: String, brand: String? = nil, _ category: CategoryID? = nil, popularity: Int = 0
  ) -> (Product, Int) {
    var product = product(sku, category)
    product.name = name
    product.brand = brand
    return (product, popularity)
  }

  @Test func searchFindsEveryTermAsThePrefixOfAWordOfTheNameBrandOrCategoryPath() throws {
    let snapshot = try Self.snapshot([
      Self.searchable("p1", "Haferdrink Barista", brand: "Oatly", "juice"),
      Self.searchable("p2", "Müsli Schoko", "fruit"),
      Self.searchable("p3", "Mineralwasser still", brand: "Gerolsteiner", "water"),
      Self.searchable("p4", "Apfelsaft naturtrüb", "juice"),
    ])
    func skus(_ text: String) throws -> [SKU] { snapshot.search(try SearchQuery(text), offset: 0, limit: 50) }
    #expect(try skus("hafer") == ["p1"])
    #expect(try skus("MUSLI") == ["p2"])
    #expect(try skus("müs") == ["p2"])
    #expect(try skus("oatly bar") == ["p1"])
    #expect(try skus("oatly schoko").isEmpty)
    #expect(try Set(skus("getranke")) == ["p1", "p3", "p4"])
    // "Säfte" is p1's and p4's category; "Apfelsaft" does not start with "saft". Alike hits: the
    // product with fewer words ranks first.
    #expect(try skus("saft") == ["p4", "p1"])
    #expect(try skus("xyzzy").isEmpty)
  }

  @Test func searchRanksNameOverBrandOverCategoryThenPopularityThenSKU() throws {
    // Three words each, so only where "obst" is found tells them apart, then popularity, then SKU.
    let snapshot = try Self.snapshot([
      Self.searchable("e", "Äpfel rot", "fruit"),
      Self.searchable("c", "Äpfel rot", "fruit"),
      Self.searchable("b", "Äpfel rot", brand: "Obsthof"),
      Self.searchable("d", "Äpfel rot", "fruit", popularity: 5),
      Self.searchable("a", "Obstsalat Äpfel rot"),
      Self.searchable("x", "Birnen", "water"),
    ])
    let query = try SearchQuery("obst")
    #expect(snapshot.search(query, offset: 0, limit: 50) == ["a", "b", "d", "c", "e"])
    #expect(snapshot.search(query, offset: 1, limit: 2) == ["b", "d"])
    #expect(snapshot.search(query, offset: 4, limit: 10) == ["e"])
    #expect(snapshot.search(query, offset: 5, limit: 10).isEmpty)
    // "rot" is in five names alike: popularity decides.
    #expect(snapshot.search(try SearchQuery("rot"), offset: 0, limit: 1) == ["d"])
  }
}
