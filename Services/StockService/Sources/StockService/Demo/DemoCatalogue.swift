import GrocerContracts
import GrocerCore

/// The demo assortment's catalogue screens: a two-level tree of about 40 categories over the
/// product lines, placeholder images of real sizes (`grocer images` draws them for the gateway's
/// `/images/`), some products on offer, and a home of banners, tiles, three product rows and buy
/// again.
public enum DemoCatalogue {
  /// Top-level categories with their children: (id, name, lines of `DemoAssortment.catalogue`).
  static let sections:
    [(id: CategoryID, name: String, children: [(id: CategoryID, name: String, lines: [String])])] = [
      (
        "obst-gemuese", "Obst & Gemüse",
        [("obst", "Obst", ["Bananen", "Äpfel"]), ("gemuese", "Gemüse", ["Tomaten", "Kartoffeln"])]
      ),
      (
        "molkerei", "Milch, Käse & Eier",
        [
          ("milch", "Milch", ["Vollmilch", "Fettarme Milch"]),
          ("pflanzendrinks", "Pflanzendrinks", ["Haferdrink"]),
          ("joghurt", "Joghurt", ["Joghurt"]), ("kaese", "Käse", ["Käse"]), ("butter", "Butter", ["Butter"]),
          ("eier", "Eier", ["Eier"]),
        ]
      ),
      ("backwaren", "Brot & Backwaren", [("brot", "Brot", ["Brot"]), ("toast", "Toast & Brötchen", [])]),
      (
        "vorrat", "Vorrat",
        [("nudeln", "Nudeln", ["Nudeln"]), ("reis", "Reis", ["Reis"]), ("konserven", "Konserven", [])]
      ),
      ("fruehstueck", "Frühstück", [("muesli", "Müsli", ["Müsli"]), ("kaffee", "Kaffee", ["Kaffee"])]),
      (
        "suesses-snacks", "Süßes & Snacks",
        [("schokolade", "Schokolade", ["Schokolade"]), ("chips", "Chips", ["Chips"])]
      ),
      (
        "getraenke", "Getränke",
        [
          ("wasser", "Wasser", ["Mineralwasser"]), ("schorlen", "Schorlen", ["Apfelschorle"]),
          ("saefte", "Säfte", ["Saft"]), ("limonaden", "Cola & Limonaden", ["Cola"]),
          ("mate", "Mate", ["Club-Mate"]),
          ("eistee", "Eistee", ["Eistee"]), ("bier", "Bier", ["Bier"]),
        ]
      ),
      ("tiefkuehl", "Tiefkühl", [("pizza", "Pizza", ["Tiefkühlpizza"]), ("eis", "Eis", ["Eiscreme"])]),
      (
        "fleisch", "Fleisch & Fisch",
        [("gefluegel", "Geflügel", ["Hähnchenbrustfilet"]), ("fisch", "Fisch", [])]
      ),
      (
        "haushalt", "Haushalt",
        [("papier", "Papierwaren", ["Toilettenpapier"]), ("spuelen", "Spülen & Putzen", ["Spülmittel"])]
      ),
    ]

  /// A product line's category.
  static let categoryOfLine: [String: CategoryID] = {
    var map: [String: CategoryID] = [:]
    for section in sections {
      for child in section.children { for line in child.lines { map[line] = child.id } }
    }
    return map
  }()

  public static func categoryImage(_ id: CategoryID) -> ProductImage {
    ProductImage(url: "/images/categories/\(id).png", width: 240, height: 240)
  }

  public static func productImage(_ category: CategoryID) -> ProductImage {
    ProductImage(url: "/images/products/\(category).png", width: 400, height: 400)
  }

  public static func bannerImage(_ id: String) -> ProductImage {
    ProductImage(url: "/images/banners/\(id).png", width: 1200, height: 400)
  }

  /// Every image the demo names, for `grocer images` to draw.
  public static var images: [ProductImage] {
    var images: [ProductImage] = []
    for section in sections {
      images.append(categoryImage(section.id))
      for child in section.children {
        images.append(categoryImage(child.id))
        images.append(productImage(child.id))
      }
    }
    return images + home.sections.flatMap { $0.banners ?? [] }.map(\.image)
  }

  // The ids are valid by construction.
  public static let tree = try! CategoryTree(
    roots: sections.map { section in
      Category(
        id: section.id, name: section.name, image: categoryImage(section.id),
        children: section.children.map { Category(id: $0.id, name: $0.name, image: categoryImage($0.id)) })
    })

  /// Every 23rd product is on offer at about a fifth off.
  static let offerEvery = 23

  /// Gives a generated product its brand, category, image and, for some, an original price.
  static func dress(_ product: inout Product, line: String, brand: String, index: Int) {
    product.brand = brand.isEmpty ? nil : brand
    product.category = categoryOfLine[line]
    product.image = product.category.map(productImage)
    if index % offerEvery == 5 {
      // Shelf prices end in 9, the struck-through one too.
      let original = (product.price.minorUnits * 5 / 4 / 10 + 1) * 10 - 1
      product.originalPrice = Money(minorUnits: original, currency: product.price.currency)
    }
  }

  public static let home = HomeLayout(sections: [
    HomeSection(
      id: "banners", type: .banners,
      banners: [
        Banner(
          id: "obst", title: "Frisches Obst, in Minuten da", image: bannerImage("obst"),
          target: .category("obst")),
        Banner(
          id: "getraenke", title: "Getränke für den Abend", image: bannerImage("getraenke"),
          target: .category("getraenke")),
        Banner(
          id: "fruehstueck", title: "Alles fürs Frühstück", image: bannerImage("fruehstueck"),
          target: .category("fruehstueck")),
      ]),
    HomeSection(id: "buy-again", type: .buyAgain, title: "Nochmal kaufen"),
    HomeSection(id: "categories", type: .categories, title: "Kategorien"),
    HomeSection(id: "offers", type: .products, title: "Angebote der Woche", source: .onOffer),
    HomeSection(id: "fruit", type: .products, title: "Frisches Obst", source: .category("obst")),
    HomeSection(id: "drinks", type: .products, title: "Getränke", source: .category("getraenke")),
  ])
}
