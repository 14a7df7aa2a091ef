import Foundation
import GrocerContracts
import GrocerCore

/// A deterministic demo assortment: hubs `h1`, `h2`, `h3` in Berlin, about 3,000 products with
/// realistic German names, prices, deposits and unit prices (the same SKUs and prices in every
/// hub) and counts that differ per hub (most 5–80, about 10 % at 1–3, about 5 % at 0). The demo
/// promo codes are CartService's (`cart-service load-demo`).
///
/// Built from a seeded `SplitMix64`, so the same seed always gives the same assortment.
public struct DemoAssortment: Sendable {
  public var hubs: [Hub]
  /// Products in SKU order (`p00001`, `p00002`, …), carried by every hub.
  public var products: [Product]
  /// Counts per hub and SKU.
  public var counts: [HubID: [SKU: Int]]
  /// Where each hub delivers (`demoAreas`).
  public var areas: [HubID: DeliveryArea] = Self.demoAreas()
  /// Every hub's category tree and home (`DemoCatalogue`).
  public var categories: CategoryTree = DemoCatalogue.tree
  public var home: HomeLayout = DemoCatalogue.home

  public static let defaultSeed: UInt64 = 2026

  /// Generates the assortment; `productsPerHub` is capped by the number of distinct names the
  /// catalogue below can form (well over 3,000).
  public static func generate(seed: UInt64 = defaultSeed, productsPerHub: Int = 3000) -> DemoAssortment {
    var random = SplitMix64(seed: seed)
    var candidates: [(name: String, line: Line, brand: String, size: Size, edition: Edition)] = []
    for line in catalogue {
      for brand in line.brands {
        for variant in line.variants {
          for size in line.sizes {
            for edition in Edition.all {
              let sizeLabel = edition.pack > 1 ? "\(edition.pack) × \(size.label)" : size.label
              let name = [brand, line.name, variant, edition.label, sizeLabel].filter { !$0.isEmpty }
                .joined(separator: " ")
              candidates.append((name, line, brand, size, edition))
            }
          }
        }
      }
    }
    candidates.shuffle(using: &random)
    var seen = Set<String>()
    var products: [Product] = []
    for candidate in candidates where products.count < productsPerHub && seen.insert(candidate.name).inserted
    {
      let sku = "p" + pad(products.count + 1)
      var product = product(
        sku: sku, name: candidate.name, line: candidate.line, size: candidate.size,
        edition: candidate.edition,
        &random)
      DemoCatalogue.dress(&product, line: candidate.line.name, brand: candidate.brand, index: products.count)
      products.append(product)
    }
    var counts: [HubID: [SKU: Int]] = [:]
    let hubs = demoHubs()
    for hub in hubs {
      var hubRandom = SplitMix64(
        seed: seed ^ UInt64(truncatingIfNeeded: hub.id.utf8.reduce(0) { $0 &* 31 &+ Int($1) }))
      var hubCounts: [SKU: Int] = [:]
      hubCounts.reserveCapacity(products.count)
      for product in products {
        let roll = Int.random(in: 0..<100, using: &hubRandom)
        hubCounts[product.sku] =
          roll < 5
          ? 0
          : roll < 15 ? Int.random(in: 1...3, using: &hubRandom) : Int.random(in: 5...80, using: &hubRandom)
      }
      counts[hub.id] = hubCounts
    }
    return DemoAssortment(hubs: hubs, products: products, counts: counts)
  }

  /// Each hub's district, roughly: h1 Prenzlauer Berg, h2 Kreuzberg with Görlitzer Park left
  /// out (a hole), h3 Friedrichshain. h1 and h3 overlap along Greifswalder Straße, where h1's
  /// higher priority wins. The README journey's point (52.5155, 13.454) is h3's; Potsdam is
  /// nobody's.
  static func demoAreas() -> [HubID: DeliveryArea] {
    func ring(_ west: Double, _ south: Double, _ east: Double, _ north: Double) -> JSONValue {
      let corners = [(west, south), (east, south), (east, north), (west, north), (west, south)]
      return .array(corners.map { .array([.number($0.0), .number($0.1)]) })
    }
    func polygon(_ rings: [JSONValue], priority: Int = 0) -> DeliveryArea {
      // The rings are valid by construction.
      try! DeliveryArea(
        geoJSON: .object(["type": .string("Polygon"), "coordinates": .array(rings)]), priority: priority)
    }
    return [
      "h1": polygon([ring(13.39, 52.525, 13.46, 52.56)], priority: 1),
      "h2": polygon([ring(13.36, 52.485, 13.45, 52.505), ring(13.432, 52.494, 13.442, 52.499)]),
      "h3": polygon([ring(13.42, 52.50, 13.48, 52.53)]),
    ]
  }

  static func demoHubs() -> [Hub] {
    let pricing = PricingSettings(
      minimumOrder: Money(minorUnits: 1000), deliveryFee: Money(minorUnits: 199),
      freeDeliveryFrom: Money(minorUnits: 3500),
      smallBasket: .init(below: Money(minorUnits: 1500), fee: Money(minorUnits: 150)))
    let dayHours = OpeningHours.daily(
      opens: LocalTime(hour: 7, minute: 0)!, closes: LocalTime(hour: 23, minute: 0)!)
    var lateWeekend = dayHours
    lateWeekend.weekly = Weekday.allCases.map { day in
      OpeningHours.Interval(
        day: day, opens: LocalTime(hour: 7, minute: 0)!,
        closes: day == .fri || day == .sat ? LocalTime(hour: 1, minute: 0)! : LocalTime(hour: 23, minute: 0)!)
    }
    return [
      Hub(id: "h1", name: "Grocer Prenzlauer Berg", hours: dayHours, pricing: pricing, currency: "EUR"),
      Hub(id: "h2", name: "Grocer Kreuzberg", hours: lateWeekend, pricing: pricing, currency: "EUR"),
      Hub(
        id: "h3", name: "Grocer Friedrichshain", hours: .daily(opens: .midnight, closes: .endOfDay),
        pricing: pricing, currency: "EUR"),
    ]
  }

  private static func product(
    sku: SKU, name: String, line: Line, size: Size, edition: Edition, _ random: inout SplitMix64
  ) -> Product {
    let perBase = Double(Int.random(in: line.centsPerBase, using: &random)) * edition.priceFactor
    let amount = size.amount * Double(edition.pack)
    let raw = max(19.0, perBase * amount)
    // Shelf prices end in 9: 1,29 €, 2,49 €.
    let price = max(19, Int((raw / 10).rounded()) * 10 - 1)
    let depositPerItem: Int? =
      switch size.container {
      case .pet, .can: 25
      case .glassBeer: 8
      case .glass: 15
      case nil: nil
      }
    let deposit = depositPerItem.map { $0 * edition.pack }
    let unitPrice = UnitPrice(
      amount: Money(minorUnits: Int((Double(price) / amount * size.unit.scale).rounded())), per: size.unit)
    return Product(
      sku: sku, name: name, price: Money(minorUnits: price), deposit: deposit.map { Money(minorUnits: $0) },
      unitPrice: unitPrice)
  }

  private static func pad(_ value: Int) -> String {
    let digits = String(value)
    return String(repeating: "0", count: max(0, 5 - digits.count)) + digits
  }

  enum Container { case pet, can, glass, glassBeer }

  /// A presentation of any product: plain, premium, regional, or a multipack.
  struct Edition {
    var label: String
    var priceFactor: Double
    var pack: Int

    static let all = [
      Edition(label: "", priceFactor: 1, pack: 1),
      Edition(label: "Premium", priceFactor: 1.35, pack: 1),
      Edition(label: "aus der Region", priceFactor: 1.15, pack: 1),
      Edition(label: "Vorteilspack", priceFactor: 0.9, pack: 2),
    ]
  }

  /// A pack size: `amount` in kilograms, litres or pieces, and its deposit container.
  struct Size {
    var label: String
    var amount: Double
    var unit: UnitPrice.Unit
    var container: Container?

    static func g(_ grams: Int) -> Size {
      Size(
        label: grams >= 1000 ? "\(grams / 1000) kg" : "\(grams) g", amount: Double(grams) / 1000,
        unit: grams < 250 ? .hundredGrams : .kilogram)
    }
    static func ml(_ millilitres: Int, _ container: Container? = nil) -> Size {
      let label =
        millilitres >= 1000
        ? (millilitres % 1000 == 0
          ? "\(millilitres / 1000) l" : "\(millilitres / 1000),\(millilitres % 1000 / 100) l")
        : millilitres % 100 == 0 ? "0,\(millilitres / 100) l" : "0,\(millilitres / 10) l"
      return Size(label: label, amount: Double(millilitres) / 1000, unit: .litre, container: container)
    }
    static func pieces(_ count: Int) -> Size {
      Size(label: count == 1 ? "" : "\(count) Stück", amount: Double(count), unit: .piece)
    }
  }

  /// A product line: every brand × variant × size combination is a candidate product.
  struct Line {
    var name: String
    var brands: [String]
    var variants: [String]
    var sizes: [Size]
    /// Shelf price per kilogram, litre or piece, in cents.
    var centsPerBase: ClosedRange<Int>
  }

  static let catalogue: [Line] = [
    Line(
      name: "Vollmilch", brands: ["Bio", "Weidemilch", "Landliebe", "Gut&Günstig", "Berchtesgadener"],
      variants: ["3,8%", "3,5%", "laktosefrei 3,5%"], sizes: [.ml(1000), .ml(500)], centsPerBase: 99...189),
    Line(
      name: "Fettarme Milch", brands: ["Bio", "Weidemilch", "Gut&Günstig", "Arla"],
      variants: ["1,5%", "laktosefrei 1,5%"], sizes: [.ml(1000)], centsPerBase: 95...169),
    Line(
      name: "Haferdrink", brands: ["Oatly", "Alpro", "Bio", "Kölln"],
      variants: ["", "Barista", "Schoko", "ungesüßt"],
      sizes: [.ml(1000), .ml(250)], centsPerBase: 159...299),
    Line(
      name: "Joghurt", brands: ["Bio", "Andechser", "Zott", "Ehrmann", "Danone"],
      variants: ["Natur 3,8%", "Natur 1,5%", "Erdbeere", "Heidelbeere", "Vanille", "Griechischer Art"],
      sizes: [.g(150), .g(500)], centsPerBase: 180...560),
    Line(
      name: "Käse", brands: ["Bio", "Leerdammer", "Gouda", "Milram", "Allgäuer"],
      variants: ["jung", "mittelalt", "alt", "in Scheiben", "gerieben"], sizes: [.g(150), .g(250), .g(400)],
      centsPerBase: 900...2400),
    Line(
      name: "Butter", brands: ["Bio", "Kerrygold", "Meggle", "Gut&Günstig"],
      variants: ["", "gesalzen", "Kräuter"],
      sizes: [.g(250)], centsPerBase: 700...1300),
    Line(
      name: "Eier", brands: ["Bio", "Freiland", "Bodenhaltung"], variants: ["Größe M", "Größe L"],
      sizes: [.pieces(6), .pieces(10)], centsPerBase: 28...65),
    Line(
      name: "Bananen", brands: ["", "Bio", "Fairtrade"], variants: [""], sizes: [.g(1000), .g(500)],
      centsPerBase: 129...249),
    Line(
      name: "Äpfel", brands: ["", "Bio"], variants: ["Elstar", "Braeburn", "Pink Lady", "Gala", "Jonagold"],
      sizes: [.g(1000), .g(500)], centsPerBase: 199...449),
    Line(
      name: "Tomaten", brands: ["", "Bio"], variants: ["Rispen", "Cherry", "Datterino", "Ochsenherz"],
      sizes: [.g(250), .g(500)], centsPerBase: 399...1199),
    Line(
      name: "Kartoffeln", brands: ["", "Bio"],
      variants: ["festkochend", "mehligkochend", "vorwiegend festkochend"],
      sizes: [.g(1000), .g(2500)], centsPerBase: 99...249),
    Line(
      name: "Brot", brands: ["Harry", "Bio", "Mestemacher", "Lieken"],
      variants: ["Vollkorn", "Roggenmisch", "Dinkel", "Sonnenblumenkern", "Toast", "Buttertoast"],
      sizes: [.g(500), .g(750)], centsPerBase: 250...699),
    Line(
      name: "Nudeln", brands: ["Barilla", "De Cecco", "Bio", "Birkel"],
      variants: ["Spaghetti", "Penne", "Fusilli", "Farfalle", "Rigatoni", "Vollkorn-Penne"],
      sizes: [.g(500), .g(1000)], centsPerBase: 180...460),
    Line(
      name: "Reis", brands: ["Uncle Ben's", "Bio", "Oryza", "Reis-Fit"],
      variants: ["Basmati", "Jasmin", "Langkorn", "Risotto"],
      sizes: [.g(500), .g(1000)], centsPerBase: 220...520),
    Line(
      name: "Müsli", brands: ["Kölln", "Seitenbacher", "Bio", "Dr. Oetker Vitalis"],
      variants: ["Knusper Schoko", "Früchte", "Nuss", "Basis", "Beeren"], sizes: [.g(500), .g(750)],
      centsPerBase: 500...1100),
    Line(
      name: "Kaffee", brands: ["Tchibo", "Dallmayr", "Lavazza", "Bio", "Jacobs"],
      variants: ["ganze Bohne", "gemahlen", "Espresso", "entkoffeiniert"], sizes: [.g(500), .g(1000)],
      centsPerBase: 1100...2400),
    Line(
      name: "Schokolade", brands: ["Ritter Sport", "Milka", "Lindt", "Bio", "Alnatura"],
      variants: ["Vollmilch", "Zartbitter 70%", "Haselnuss", "Weiße", "Marzipan", "Joghurt"],
      sizes: [.g(100)],
      centsPerBase: 990...2990),
    Line(
      name: "Chips", brands: ["Lay's", "Funny-frisch", "Chio", "Pringles"],
      variants: ["Paprika", "gesalzen", "Sour Cream", "Salt & Vinegar", "Chili"], sizes: [.g(150), .g(175)],
      centsPerBase: 990...1490),
    Line(
      name: "Mineralwasser", brands: ["Gerolsteiner", "Volvic", "Adelholzener", "Vittel", "Spreequell"],
      variants: ["Classic", "Medium", "Naturell"],
      sizes: [.ml(500, .pet), .ml(1500, .pet), .ml(750, .glass)],
      centsPerBase: 40...160),
    Line(
      name: "Apfelschorle", brands: ["Lift", "Bio", "Spreequell", "Adelholzener"],
      variants: ["", "naturtrüb"],
      sizes: [.ml(500, .pet), .ml(1500, .pet)], centsPerBase: 90...220),
    Line(
      name: "Saft", brands: ["Hohes C", "Granini", "Bio", "Rauch"],
      variants: ["Orange", "Apfel", "Multivitamin", "Orange mit Fruchtfleisch", "Traube"],
      sizes: [.ml(1000, .glass), .ml(1000)], centsPerBase: 149...399),
    Line(
      name: "Cola", brands: ["Coca-Cola", "Pepsi", "fritz-kola", "Afri"], variants: ["", "Zero", "light"],
      sizes: [.ml(330, .can), .ml(500, .pet), .ml(1500, .pet), .ml(330, .glass)], centsPerBase: 99...400),
    Line(
      name: "Club-Mate", brands: [""], variants: ["", "Granat", "Ice T", "Winter-Edition", "Zero"],
      sizes: [.ml(500, .glassBeer), .ml(330, .glassBeer), .ml(330, .can)], centsPerBase: 180...360),
    Line(
      name: "Bier",
      brands: ["Berliner Kindl", "Berliner Pilsner", "Augustiner", "Beck's", "Radeberger", "Sternburg"],
      variants: ["Pils", "Helles", "Alkoholfrei", "Radler", "Weizen"],
      sizes: [.ml(500, .glassBeer), .ml(330, .glassBeer), .ml(500, .can)], centsPerBase: 150...420),
    Line(
      name: "Eistee", brands: ["Lipton", "Pfanner", "Bio"], variants: ["Pfirsich", "Zitrone", "Grüner Tee"],
      sizes: [.ml(500, .pet), .ml(1500, .pet), .ml(330, .can)], centsPerBase: 80...300),
    Line(
      name: "Tiefkühlpizza", brands: ["Dr. Oetker Ristorante", "Wagner", "Gustavo Gusto", "Bio"],
      variants: ["Margherita", "Salame", "Funghi", "Tonno", "Spinaci", "Quattro Formaggi", "Hawaii"],
      sizes: [.g(350), .g(400)], centsPerBase: 600...1300),
    Line(
      name: "Eiscreme", brands: ["Ben & Jerry's", "Langnese", "Häagen-Dazs", "Bio"],
      variants: ["Vanille", "Schokolade", "Cookie Dough", "Erdbeere", "Salted Caramel"],
      sizes: [.ml(465), .ml(900)],
      centsPerBase: 600...1400),
    Line(
      name: "Hähnchenbrustfilet", brands: ["", "Bio", "Wiesenhof"], variants: ["", "mariniert"],
      sizes: [.g(400), .g(1000)], centsPerBase: 1100...2600),
    Line(
      name: "Toilettenpapier", brands: ["Zewa", "Hakle", "Bio Recycling"], variants: ["3-lagig", "4-lagig"],
      sizes: [.pieces(8), .pieces(16)], centsPerBase: 35...75),
    Line(
      name: "Spülmittel", brands: ["Fairy", "Frosch", "Pril"],
      variants: ["Zitrone", "Original", "Sensitive"],
      sizes: [.ml(450), .ml(750)], centsPerBase: 250...600),
  ]
}

extension UnitPrice.Unit {
  /// Factor from "per kilogram/litre/piece" to this unit.
  fileprivate var scale: Double {
    switch self {
    case .hundredGrams, .hundredMillilitres: 0.1
    default: 1
    }
  }
}
